//! What this instance last saw of owner records, per cell (bounded, oldest forgotten first): the version it
//! read, wrote, or found absent. The node uses an entry only to choose the guard of a claim's first write,
//! which the store checks (`If-Match` the version seen, `If-None-Match: *` when absent); a failed guard
//! sends the claim back to reading. It must never answer a read, never stand for a peer's lease, and never
//! decide a takeover: a version seen earlier says nothing about whether its owner is alive now.
//!
//! It also keeps score of how often a remembered version was still current when a claim came: a hit saves
//! the read, a miss costs a refused write and then the read, so remembered versions are only worth writing
//! over while at least about half of them are current (under contention they mostly are not). The rate is
//! a moving average over roughly the last eight claims that had a version to try.

use crate::ownership::records::OwnerRecord;

/// Cells remembered per instance: enough for a node's working set, small enough to scan.
pub const KNOWN_CELLS: usize = 128;

/// `None` as a version: the record was absent.
pub type Version = Option<OwnerRecord>;

pub struct Known {
    cells: Vec<(String, Version)>,
    /// Recent hit rate, `ONE` meaning all: an exponential moving average with weight 1/8.
    hit_rate: u32,
}

/// A hit rate of 100 %.
const ONE: u32 = 1 << 16;

impl Default for Known {
    /// At the threshold: the first try decides (a miss stops the tries, a hit keeps them going).
    fn default() -> Self {
        Known { cells: Vec::new(), hit_rate: ONE / 2 }
    }
}

impl Known {
    /// Whether writing over a remembered version has recently paid off at least half of the time.
    pub fn worth_trying(&self) -> bool {
        self.hit_rate >= ONE / 2
    }

    /// Scores one remembered version: current when the claim came (`hit`), or not. Learnt from tries and,
    /// while not trying, from the read each claim makes anyway, so the rate can recover.
    pub fn scored(&mut self, hit: bool) {
        self.hit_rate = self.hit_rate - self.hit_rate / 8 + if hit { ONE / 8 } else { 0 };
    }

    pub fn get(&self, cell: &str) -> Option<&Version> {
        self.cells.iter().find(|(c, _)| c == cell).map(|(_, v)| v)
    }

    /// Remembers `version` as the cell's latest, forgetting the oldest cell when full.
    pub fn set(&mut self, cell: &str, version: Version) {
        self.forget(cell);
        if self.cells.len() == KNOWN_CELLS {
            self.cells.remove(0);
        }
        self.cells.push((cell.to_owned(), version));
    }

    pub fn forget(&mut self, cell: &str) {
        if let Some(i) = self.cells.iter().position(|(c, _)| c == cell) {
            self.cells.remove(i);
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
        assert_eq!(known.cells.len(), KNOWN_CELLS - 1);
    }

    #[test]
    fn remembered_versions_are_tried_while_they_pay_off() {
        let mut known = Known::default();
        assert!(known.worth_trying());
        known.scored(false);
        assert!(!known.worth_trying(), "the first miss stops the tries");
        known.scored(true);
        assert!(known.worth_trying(), "a hit seen while not trying, right after: resumed");
        for _ in 0..20 {
            known.scored(true);
            known.scored(false);
            known.scored(false);
        }
        assert!(!known.worth_trying(), "a third current: stop");
        known.scored(true);
        assert!(!known.worth_trying(), "and one lucky hit does not resume them");
        for _ in 0..20 {
            known.scored(true);
            known.scored(true);
            known.scored(false);
        }
        assert!(known.worth_trying(), "two thirds current: keep trying");
        for _ in 0..100 {
            known.scored(true);
        }
        assert_eq!(known.hit_rate, ONE, "never above 100 %");
    }
}
