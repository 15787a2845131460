//! Which version of each peer's lease this instance has seen, and since when.

use std::collections::VecDeque;

/// The version of a holder's lease a read showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    /// Present, with this ETag.
    Lease(String),
    /// Absent, seen while judging `cell`'s owner record at the version `owner_etag`. A lease key's absence
    /// can repeat (deleted, written, deleted again); a cell's owner-record versions never do, and the
    /// holder acts for that version only under the lease generation it was written in.
    Missing { cell: String, owner_etag: String },
}

/// One read of a holder's lease: the monotonic instants it was sent and its answer arrived.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Read {
    pub sent: f64,
    pub arrived: f64,
}

#[derive(Debug, Clone, PartialEq)]
struct Sighting {
    holder: String,
    version: Version,
    /// When the answer that first showed this version arrived.
    first: f64,
    /// When the latest answer that showed it arrived.
    last: f64,
}

/// Sightings remembered (oldest forgotten first): a forgotten one only starts over, which is safe.
pub const SIGHTINGS_REMEMBERED: usize = 64;

/// The versions of holders' leases this instance has seen, per lease key (the holder's node id) and
/// version, never shared between keys.
#[derive(Debug, Clone, Default)]
pub struct Sightings {
    seen: VecDeque<Sighting>,
}

impl Sightings {
    /// A read of `holder`'s lease showed `version`. Returns for how long that version has been seen
    /// unchanged, as of when this read was sent: from the arrival of the first answer that showed it to
    /// this read's send (0 on a first sight). A sighting not renewed by a later one within `forget_after_ms`
    /// starts over, which bounds what is remembered and for how long. Seeing a lease present ends every
    /// sighting of it missing, and the other way round: its earlier versions are gone.
    pub fn saw(&mut self, holder: &str, version: Version, read: Read, forget_after_ms: f64) -> f64 {
        let present = matches!(version, Version::Lease(_));
        let same = |s: &Sighting| s.holder == holder && s.version == version;
        let found = self.seen.iter().position(|s| same(s) && read.sent - s.last <= forget_after_ms);
        self.seen.retain(|s| {
            if s.holder != holder {
                true
            } else if same(s) {
                found.is_some()
            } else {
                // Present: every other version is gone. Missing: so are present versions, while other cells'
                // sightings of the absence stand (each is about its own owner-record version).
                !present && matches!(s.version, Version::Missing { .. })
            }
        });
        if let Some(s) = self.seen.iter_mut().find(|s| same(s)) {
            s.last = s.last.max(read.arrived);
            return (read.sent - s.first).max(0.0);
        }
        if self.seen.len() == SIGHTINGS_REMEMBERED {
            self.seen.pop_front();
        }
        self.seen.push_back(Sighting { holder: holder.to_owned(), version, first: read.arrived, last: read.arrived });
        0.0
    }

    /// When the version of `holder`'s lease seen last was first seen (monotonic), if it is remembered.
    pub fn first_seen(&self, holder: &str, version: &Version) -> Option<f64> {
        self.seen.iter().find(|s| s.holder == holder && &s.version == version).map(|s| s.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sent: f64, arrived: f64) -> Read {
        Read { sent, arrived }
    }

    fn lease(etag: &str) -> Version {
        Version::Lease(etag.into())
    }

    #[test]
    fn a_version_counts_from_the_arrival_of_its_first_answer_to_the_send_of_the_latest_read() {
        let mut s = Sightings::default();
        assert_eq!(s.saw("b", lease("v1"), read(0.0, 300.0), 1e9), 0.0);
        // A read sent 250 ms later (before the first answer arrived, say concurrently): not a moment seen.
        assert_eq!(s.saw("b", lease("v1"), read(250.0, 900.0), 1e9), 0.0);
        assert_eq!(s.saw("b", lease("v1"), read(3_300.0, 3_400.0), 1e9), 3_000.0);
        assert_eq!(s.first_seen("b", &lease("v1")), Some(300.0));
        // Per lease key: another holder's same ETag is another sighting.
        assert_eq!(s.saw("c", lease("v1"), read(3_300.0, 3_350.0), 1e9), 0.0);
        // A new version starts over.
        assert_eq!(s.saw("b", lease("v2"), read(4_000.0, 4_100.0), 1e9), 0.0);
        assert_eq!(s.saw("b", lease("v1"), read(5_000.0, 5_100.0), 1e9), 0.0, "v1 again (a restore) starts over");
    }

    #[test]
    fn absence_is_a_version_per_cell_and_presence_ends_it() {
        let mut s = Sightings::default();
        let missing = |cell: &str, etag: &str| Version::Missing { cell: cell.into(), owner_etag: etag.into() };
        assert_eq!(s.saw("b", missing("x", "o1"), read(0.0, 10.0), 1e9), 0.0);
        assert_eq!(s.saw("b", missing("y", "o7"), read(100.0, 110.0), 1e9), 0.0);
        assert_eq!(s.saw("b", missing("x", "o1"), read(1_010.0, 1_020.0), 1e9), 1_000.0);
        assert_eq!(s.saw("b", missing("y", "o7"), read(1_110.0, 1_120.0), 1e9), 1_000.0, "another cell's sighting stays");
        assert_eq!(s.saw("b", missing("x", "o2"), read(1_200.0, 1_210.0), 1e9), 0.0, "another owner version starts over");
        s.saw("b", lease("v9"), read(1_300.0, 1_310.0), 1e9);
        assert_eq!(s.saw("b", missing("y", "o7"), read(1_400.0, 1_410.0), 1e9), 0.0, "seen present: starts over");
        assert_eq!(s.saw("b", lease("v9"), read(1_500.0, 1_510.0), 1e9), 0.0, "seen missing since: v9 is gone");
    }

    #[test]
    fn a_sighting_not_renewed_in_time_starts_over_and_memory_is_bounded() {
        let mut s = Sightings::default();
        s.saw("b", lease("v1"), read(0.0, 10.0), 5_000.0);
        assert_eq!(s.saw("b", lease("v1"), read(5_010.0, 5_020.0), 5_000.0), 5_000.0);
        assert_eq!(s.saw("b", lease("v1"), read(10_021.0, 10_030.0), 5_000.0), 0.0);
        for i in 0..SIGHTINGS_REMEMBERED + 5 {
            s.saw(&format!("n{i}"), lease("v"), read(0.0, 1.0), 1e9);
        }
        assert_eq!(s.seen.len(), SIGHTINGS_REMEMBERED);
        assert_eq!(s.first_seen("n0", &lease("v")), None, "the oldest is forgotten first");
    }
}
