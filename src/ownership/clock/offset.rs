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

/// The lead at the last reading, and when (monotonic).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OffsetWatch {
    last: Option<(f64, f64)>,
}

impl OffsetWatch {
    /// Takes a reading: true when the lead moved since the previous one by more than both clocks' rates and
    /// [`OFFSET_SLACK_MS`] allow (a sleep, or a step of the wall clock either way).
    /// A monotonic clock that went back is no monotonic clock (workerd derives `performance.now()` from
    /// `Date.now()`, so a step back of the one takes the other with it): that counts as a move too.
    pub fn moved(&mut self, now: Reading) -> bool {
        let lead = now.wall as f64 - now.mono;
        let Some((last, at)) = self.last.replace((lead, now.mono)) else { return false };
        now.mono + OFFSET_SLACK_MS < at || (lead - last).abs() > OFFSET_SLACK_MS + 2.0 * RATE * (now.mono - at).abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::clock::at;

    #[test]
    fn the_lead_moves_with_a_sleep_or_a_step_and_not_with_time_or_rates() {
        let mut w = OffsetWatch::default();
        assert!(!w.moved(at(0.0, 50_000)), "the first reading is the reference");
        assert!(!w.moved(at(10_000.0, 60_000)), "both clocks ran");
        // 0.1 % apart over 10 s, plus a millisecond of resolution: within the slack.
        assert!(!w.moved(at(20_000.0, 70_021)));
        assert!(w.moved(at(20_001.0, 70_021 + 60_000)), "slept a minute (or the wall clock was stepped forward)");
        assert!(w.moved(at(20_002.0, 70_022)), "stepped back a minute");
        // A sleep of 60 s and a step back of 48 s between two readings: the lead grew by 12 s.
        assert!(w.moved(at(20_003.0, 70_023 + 12_000)));
        assert!(!w.moved(at(20_004.0, 70_024 + 12_000)));
        assert!(w.moved(at(20_005.0, 70_025 + 12_000 - 30)), "a step back just over the slack");
    }

    #[test]
    fn the_slack_is_the_resolution_plus_both_rates_of_the_time_between() {
        let mut w = OffsetWatch::default();
        w.moved(at(100_000.0, 1_000_000));
        assert!(!w.moved(at(100_000.0, 1_000_025)), "exactly the resolution: not a move");
        assert!(w.moved(at(100_000.0, 1_000_051)), "just over it");
        // 100 s later: 2 × 0.1 % of it (200 ms) on top of the 25 ms.
        assert!(!w.moved(at(200_000.0, 1_100_051 + 150)), "within the clocks' rates");
        assert!(w.moved(at(300_000.0, 1_200_201 + 1_000)), "a second off in 100 s");
        // The monotonic clock going back by exactly the resolution is not yet going back; by more, it is.
        let mut w = OffsetWatch::default();
        w.moved(at(2_000.0, 5_000));
        assert!(!w.moved(at(1_975.0, 4_975)));
        assert!(w.moved(at(975.0, 3_975)), "both clocks back a second together");
    }

    #[test]
    fn one_clock_for_both_moves_only_when_it_goes_back() {
        // workerd: `performance.now()` is `Date.now()` less the time origin, both frozen between I/O.
        let mut w = OffsetWatch::default();
        assert!(!w.moved(at(1_000.0, 1_000_000)));
        assert!(!w.moved(at(1_000.0, 1_000_000)), "frozen");
        assert!(!w.moved(at(31_000.0, 1_030_000)), "advanced at I/O, together");
        assert!(w.moved(at(1_000.0, 1_000_000)), "stepped back, and the 'monotonic' clock with it");
    }
}
