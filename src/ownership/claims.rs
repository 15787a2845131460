//! The cells this instance claimed under its current lease, keyed by cell id: a sorted `Vec` searched by
//! bisection, with the few `BTreeMap` methods the driver uses. `BTreeMap` brought ~8 KB of wasm for what
//! is, per instance, a short list. Holds no protocol rule: the driver decides what goes in and out.

use crate::prelude::*;

/// A claim: the epoch and the token the claim's write left.
pub type Claim = (u64, String);

#[derive(Default)]
pub struct Claims(Vec<(String, Claim)>);

impl Claims {
    fn find(&self, cell: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(c, _)| c.as_str().cmp(cell))
    }

    pub fn get(&self, cell: &str) -> Option<&Claim> {
        self.find(cell).ok().map(|i| &self.0[i].1)
    }

    /// Adds or replaces the claim on `cell`.
    pub fn insert(&mut self, cell: String, claim: Claim) {
        match self.find(&cell) {
            Ok(i) => self.0[i].1 = claim,
            Err(i) => self.0.insert(i, (cell, claim)),
        }
    }

    pub fn remove(&mut self, cell: &str) {
        if let Ok(i) = self.find(cell) {
            self.0.remove(i);
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// In cell order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Claim)> {
        self.0.iter().map(|(c, claim)| (c, claim))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_map_in_cell_order() {
        let mut claims = Claims::default();
        for (cell, epoch) in [("m", 1), ("a", 2), ("z", 3), ("m", 4)] {
            claims.insert(cell.into(), (epoch, format!("t{epoch}")));
        }
        assert_eq!(claims.get("m"), Some(&(4, "t4".into())));
        assert_eq!(claims.get("b"), None);
        claims.remove("a");
        claims.remove("absent");
        let cells: Vec<_> = claims.iter().map(|(c, (e, _))| (c.as_str(), *e)).collect();
        assert_eq!(cells, [("m", 4), ("z", 3)]);
        claims.clear();
        assert_eq!(claims.iter().count(), 0);
    }
}
