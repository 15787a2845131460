//! The wall clock's lead over the monotonic clock, watched at every reading (SPEC §5, changed 2026-12-06).
//! The two clocks advance together, within their rates, while the machine is awake and nobody steps its
//! wall clock. The lead grows while the machine sleeps (the monotonic clock stops) or when the wall clock
//! is stepped forward, and shrinks when it is stepped back, whatever else happened meanwhile. A sleep and a
//! step back between two readings show only as their difference: the larger advance of the two clocks then
//! undercounts the true time by the step, with no sign of it but that the lead moved. So any move ends the
//! authority timed by these clocks (docs/protocol.md, "A sleep and a step back").

use super::{Reading, RATE};

/// How far the lead may move between two readings without a sleep or a step: the clocks' resolution (a
/// browser rounds `Date.now()` to the millisecond and coarsens `performance.now()`), on top of their rates.
pub const OFFSET_SLACK_MS: f64 = 25.0;

/// A reading whose wall clock was read within this (monotonic ms) of its monotonic clock is taken as is;
/// a wider one (the thread was preempted between the reads) is taken again, up to [`READ_TRIES`] times.
pub const TIGHT_READ_MS: f64 = 2.0;
/// How many times a reading is taken before the narrowest is kept.
pub const READ_TRIES: usize = 4;

/// The lead at the last reading, when (monotonic), and how long that reading took (the monotonic time
/// from before the wall clock was read to after it).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OffsetWatch {
    last: Option<(f64, f64, f64)>,
}

impl OffsetWatch {
    /// Takes a reading that took `width` ms of monotonic time (its wall clock was read at most that long
    /// after its monotonic clock): true when the lead moved since the previous reading by more than both
    /// clocks' rates, [`OFFSET_SLACK_MS`] and the wider of the two readings' widths allow (a sleep, or a
    /// step of the wall clock either way). A thread preempted between its reads makes the lead look larger
    /// by up to the width and nothing else: the monotonic clock runs through a preemption and stops only in
    /// a sleep, so no sleep hides in a width.
    /// A monotonic clock that went back is no monotonic clock (workerd derives `performance.now()` from
    /// `Date.now()`, so a step back of the one takes the other with it): that counts as a move too.
    pub fn moved(&mut self, now: Reading, width: f64) -> bool {
        let lead = now.wall as f64 - now.mono;
        let width = width.max(0.0);
        let Some((last, at, last_width)) = self.last.replace((lead, now.mono, width)) else { return false };
        let slack = OFFSET_SLACK_MS + width.max(last_width);
        now.mono + OFFSET_SLACK_MS < at || (lead - last).abs() > slack + 2.0 * RATE * (now.mono - at).abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::clock::at;

    impl OffsetWatch {
        /// A reading taken with no time between its reads.
        fn moved_now(&mut self, now: Reading) -> bool {
            self.moved(now, 0.0)
        }
    }

    #[test]
    fn the_lead_moves_with_a_sleep_or_a_step_and_not_with_time_or_rates() {
        let mut w = OffsetWatch::default();
        assert!(!w.moved_now(at(0.0, 50_000)), "the first reading is the reference");
        assert!(!w.moved_now(at(10_000.0, 60_000)), "both clocks ran");
        // 0.1 % apart over 10 s, plus a millisecond of resolution: within the slack.
        assert!(!w.moved_now(at(20_000.0, 70_021)));
        assert!(w.moved_now(at(20_001.0, 70_021 + 60_000)), "slept a minute (or the wall clock was stepped forward)");
        assert!(w.moved_now(at(20_002.0, 70_022)), "stepped back a minute");
        // A sleep of 60 s and a step back of 48 s between two readings: the lead grew by 12 s.
        assert!(w.moved_now(at(20_003.0, 70_023 + 12_000)));
        assert!(!w.moved_now(at(20_004.0, 70_024 + 12_000)));
        assert!(w.moved_now(at(20_005.0, 70_025 + 12_000 - 30)), "a step back just over the slack");
    }

    #[test]
    fn the_slack_is_the_resolution_plus_both_rates_of_the_time_between() {
        let mut w = OffsetWatch::default();
        w.moved_now(at(100_000.0, 1_000_000));
        assert!(!w.moved_now(at(100_000.0, 1_000_025)), "exactly the resolution: not a move");
        assert!(w.moved_now(at(100_000.0, 1_000_051)), "just over it");
        // 100 s later: 2 × 0.1 % of it (200 ms) on top of the 25 ms.
        assert!(!w.moved_now(at(200_000.0, 1_100_051 + 150)), "within the clocks' rates");
        assert!(w.moved_now(at(300_000.0, 1_200_201 + 1_000)), "a second off in 100 s");
        // The monotonic clock going back by exactly the resolution is not yet going back; by more, it is.
        let mut w = OffsetWatch::default();
        w.moved_now(at(2_000.0, 5_000));
        assert!(!w.moved_now(at(1_975.0, 4_975)));
        assert!(w.moved_now(at(975.0, 3_975)), "both clocks back a second together");
    }

    #[test]
    fn one_clock_for_both_moves_only_when_it_goes_back() {
        // workerd: `performance.now()` is `Date.now()` less the time origin, both frozen between I/O.
        let mut w = OffsetWatch::default();
        assert!(!w.moved_now(at(1_000.0, 1_000_000)));
        assert!(!w.moved_now(at(1_000.0, 1_000_000)), "frozen");
        assert!(!w.moved_now(at(31_000.0, 1_030_000)), "advanced at I/O, together");
        assert!(w.moved_now(at(1_000.0, 1_000_000)), "stepped back, and the 'monotonic' clock with it");
    }

    #[test]
    fn a_reading_preempted_between_its_reads_widens_the_slack_by_its_width_only() {
        let mut w = OffsetWatch::default();
        assert!(!w.moved(at(1_000.0, 1_000_000), 0.0));
        // The thread lost the core for 300 ms after reading the monotonic clock: the wall clock it read next
        // is 300 ms ahead of the monotonic reading.
        assert!(!w.moved(at(2_000.0, 1_001_300), 300.0), "preempted, not moved");
        assert!(!w.moved(at(3_000.0, 1_002_000), 0.0), "the lead back where it was: the previous width still counts");
        assert!(w.moved(at(3_001.0, 1_002_001 + 60_000), 0.0), "a sleep or a step forward still shows");
        // A step back larger than the width and the slack shows through a wide reading.
        let mut w = OffsetWatch::default();
        assert!(!w.moved(at(1_000.0, 1_000_000), 0.0));
        assert!(w.moved(at(2_000.0, 1_001_000 - 400), 300.0), "back 400 ms, read over 300 ms");
        assert!(!w.moved(at(2_100.0, 1_001_100 - 400 + 300), 300.0), "within the width and the slack");
    }
}
