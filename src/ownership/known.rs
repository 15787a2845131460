//! What this instance last saw of owner records, per cell (bounded, oldest forgotten first): the version it
//! read, wrote, or found absent. The driver uses an entry only to choose the guard of a claim's first write,
//! which the store checks (`If-Match` the version seen, `If-None-Match: *` when absent); a failed guard
//! sends the claim back to reading. It must never answer a read, never stand for a peer's lease, and never
//! decide a takeover: a version seen earlier says nothing about whether its owner is alive now.

use crate::ownership::records::OwnerRecord;

/// Cells remembered per instance: enough for a node's working set, small enough to scan.
pub const KNOWN_CELLS: usize = 128;

/// `None` as a version: the record was absent.
pub type Version = Option<OwnerRecord>;

#[derive(Default)]
pub struct Known(Vec<(String, Version)>);

impl Known {
    pub fn get(&self, cell: &str) -> Option<&Version> {
        self.0.iter().find(|(c, _)| c == cell).map(|(_, v)| v)
    }

    /// Remembers `version` as the cell's latest, forgetting the oldest cell when full.
    pub fn set(&mut self, cell: &str, version: Version) {
        self.forget(cell);
        if self.0.len() == KNOWN_CELLS {
            self.0.remove(0);
        }
        self.0.push((cell.to_owned(), version));
    }

    pub fn forget(&mut self, cell: &str) {
        if let Some(i) = self.0.iter().position(|(c, _)| c == cell) {
            self.0.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(epoch: u64) -> OwnerRecord {
        OwnerRecord { node: String::new(), epoch, etag: format!("t{epoch}"), nonce: None }
    }

    #[test]
    fn keeps_the_latest_version_and_forgets_the_oldest_cell_when_full() {
        let mut known = Known::default();
        known.set("a", None);
        known.set("a", Some(rec(2)));
        assert_eq!(known.get("a"), Some(&Some(rec(2))));
        for i in 0..KNOWN_CELLS {
            known.set(&format!("c{i}"), Some(rec(i as u64)));
        }
        assert_eq!(known.get("a"), None, "the oldest cell went first");
        assert_eq!(known.get("c0"), Some(&Some(rec(0))));
        known.set("c0", None); // refreshed: now the newest
        known.set("z", None);
        assert_eq!(known.get("c1"), None);
        assert_eq!(known.get("c0"), Some(&None));
        known.forget("c0");
        assert_eq!(known.get("c0"), None);
        assert_eq!(known.0.len(), KNOWN_CELLS - 1);
    }
}
