//! What this instance knows of the store's clock, learnt from the `Date` headers of its answers.

use super::{elapsed_at_least, elapsed_at_most, Reading, RATE};

/// One answer from the store that carried a `Date` header (Unix ms, whole seconds), with the readings
/// taken just before its request was sent and just after the answer arrived.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp {
    pub date_ms: u64,
    pub sent: Reading,
    pub arrived: Reading,
    /// How far the store's clock may have been past `date_ms` when it answered ([`DATE_SPAN_MS`]).
    pub span_ms: f64,
}

/// A `Date` names a whole second the store's clock had reached when it answered, and not always the latest
/// one: servers that keep a cached `Date` and refresh it once a second (fasthttp's, which versitygw is built
/// on) send one up to a second older. So the store's clock was in `[date, date + 2 s)` when it answered; a
/// `Date` staler than that eats into `maxClockSkewMs` (docs/protocol.md, "`Date`").
pub const DATE_SPAN_MS: f64 = 2_000.0;

/// The span of a `Date` that is always the store's current second (the tooth `TrustFreshDate`).
pub const DATE_SECOND_MS: f64 = 1_000.0;

/// The store's clock at the reading `at` lay within `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bounds {
    lo: f64,
    hi: f64,
    at: Reading,
}

impl Bounds {
    /// The same knowledge at another reading: carried forward, or back to an earlier one (a request sent
    /// before the latest answer was learnt).
    fn at(self, now: Reading) -> (f64, f64) {
        if now.mono >= self.at.mono {
            (self.lo + elapsed_at_least(self.at, now), self.hi + elapsed_at_most(self.at, now))
        } else {
            (self.lo - elapsed_at_most(now, self.at), self.hi - elapsed_at_least(now, self.at))
        }
    }
}

/// What one answer's `Date` said, next to what was known before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learnt {
    /// The first `Date` this instance has seen.
    First,
    /// Within the bounds known (which it may narrow).
    Agrees,
    /// The store's clock is past the upper bound this instance's clocks allowed: more time passed than
    /// they counted (a sleep with the wall clock stepped back, SPEC §5's one unguarded case), or the store's
    /// clock jumped. A holder stops at once: its elapsed-time deadline undercounted too.
    Overran,
    /// The store's clock is behind the lower bound (it was stepped back, or this machine's monotonic clock
    /// ran fast). The answer alone stands; nothing this instance holds was overstated.
    Underran,
}

/// What this instance knows of the store's clock (SPEC §5: the holder writes `expires_ms` on it, and stops
/// once it passes that expiry; peers may judge a lease dead by it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreClock {
    known: Option<Bounds>,
}

impl StoreClock {
    /// Learns from one answer's `Date`. The store wrote it between the send and the arrival, so at the
    /// arrival its clock was at least `date` and at most `date + span` plus the round trip. Bounds already
    /// known are carried to the later of the two readings and intersected with it; when they do not meet
    /// (a clock was stepped, or this machine slept while its wall clock went back), the answer alone stands.
    pub fn learn(&mut self, stamp: Stamp) -> Learnt {
        let date = stamp.date_ms as f64;
        let fresh = Bounds { lo: date, hi: date + stamp.span_ms + elapsed_at_most(stamp.sent, stamp.arrived), at: stamp.arrived };
        let Some(old) = self.known else {
            self.known = Some(fresh);
            return Learnt::First;
        };
        // Concurrent requests can be learnt in another order than they arrived: carry the older forward.
        let (earlier, later) = if old.at.mono <= fresh.at.mono { (old, fresh) } else { (fresh, old) };
        let (lo, hi) = earlier.at(later.at);
        let (lo, hi) = (lo.max(later.lo), hi.min(later.hi));
        if lo <= hi {
            self.known = Some(Bounds { lo, hi, at: later.at });
            return Learnt::Agrees;
        }
        self.known = Some(fresh);
        // More store time passed than this machine's clocks allowed for: it slept while its wall clock went
        // back (or the store's clock jumped ahead). Whatever this instance measured in between is void.
        if earlier.at(later.at).1 < later.lo { Learnt::Overran } else { Learnt::Underran }
    }

    /// Whether any answer has taught the store's clock yet (a browser that is not shown the `Date` header
    /// of cross-origin answers never learns it).
    pub fn known(&self) -> bool {
        self.known.is_some()
    }

    /// The store's clock now is at least this (Unix ms); `None` before any answer with a `Date`.
    pub fn lower(&self, now: Reading) -> Option<u64> {
        self.known.map(|b| b.at(now).0.max(0.0) as u64)
    }

    /// The store's clock now is at most this (Unix ms, rounded up).
    pub fn upper(&self, now: Reading) -> Option<u64> {
        self.known.map(|b| b.at(now).1.max(0.0).ceil() as u64)
    }

    /// A best guess of the store's clock now (the middle of the bounds), for showing expiries to people.
    pub fn estimate(&self, now: Reading) -> Option<u64> {
        self.known.map(|b| {
            let (lo, hi) = b.at(now);
            ((lo + hi) / 2.0).max(0.0) as u64
        })
    }

    /// The store's clock when it served a read sent at `sent` whose answer said `date` was at least this:
    /// the answer's own `Date`, or what was known when the read was sent, whichever says more.
    pub fn served_at_least(&self, sent: Reading, date: Option<u64>) -> Option<u64> {
        match (self.lower(sent), date) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest monotonic instant from `now` at which [`StoreClock::lower`] reaches `store_ms` (`now`
    /// itself when it already has); `None` when nothing is known. The lower bound advances with the
    /// monotonic clock alone, so this instant is exact: a read sent then is served at or after `store_ms`.
    pub fn mono_when_at_least(&self, store_ms: u64, now: Reading) -> Option<f64> {
        let b = self.known?;
        let (lo, _) = b.at(now);
        let missing = store_ms as f64 - lo;
        Some(if missing <= 0.0 { now.mono } else { now.mono.max(b.at.mono) + missing / (1.0 - RATE) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::clock::{at, stamp};

    #[test]
    fn cached_dates_widen_the_upper_bound_by_a_second() {
        // A store that refreshes its cached `Date` once a second: at true 1_001_900 it still says 1_000_000.
        let (sent, arrived) = (at(0.0, 0), at(20.0, 20));
        let mut c = StoreClock::default();
        c.learn(Stamp { date_ms: 1_000_000, sent, arrived, span_ms: DATE_SPAN_MS });
        let (lo, hi) = (c.lower(arrived).unwrap(), c.upper(arrived).unwrap());
        assert!(lo <= 1_001_900 && 1_001_900 + 20 <= hi, "[{lo}, {hi}]");
        // Trusting the second alone puts the upper bound before the store's clock: a holder's `expires_ms`
        // would come a second too early, and its peers would take over while it still acts.
        let mut fresh = StoreClock::default();
        fresh.learn(stamp(1_000_000, sent, arrived));
        assert!(fresh.upper(arrived).unwrap() < 1_001_900);
        // 1.08 s later a freshly refreshed `Date` (true 1_003_000) agrees with the cached one; trusting the
        // second alone calls it an overrun, which fences a holder for nothing.
        let (sent, arrived) = (at(1_070.0, 1_070), at(1_080.0, 1_080));
        assert_eq!(c.learn(Stamp { date_ms: 1_003_000, sent, arrived, span_ms: DATE_SPAN_MS }), Learnt::Agrees);
        assert_eq!(fresh.learn(stamp(1_003_000, sent, arrived)), Learnt::Overran);
    }

    #[test]
    fn one_answer_bounds_the_store_clock_by_its_second_and_round_trip() {
        let mut c = StoreClock::default();
        assert!(!c.known());
        assert_eq!(c.lower(at(0.0, 0)), None);
        // Sent at mono 100, answered at 150: the store wrote 1_000_000 (its clock in [1_000_000, 1_001_000)).
        c.learn(stamp(1_000_000, at(100.0, 5_000), at(150.0, 5_050)));
        assert_eq!(c.lower(at(150.0, 5_050)), Some(1_000_000));
        assert_eq!(c.upper(at(150.0, 5_050)), Some(1_001_051)); // + 1 s + 50.05 ms
        // 10 s later on both clocks.
        assert_eq!(c.lower(at(10_150.0, 15_050)), Some(1_009_990));
        assert_eq!(c.upper(at(10_150.0, 15_050)), Some(1_011_061));
        assert_eq!(c.estimate(at(150.0, 5_050)), Some(1_000_525));
    }

    #[test]
    fn answers_narrow_the_bounds_and_the_wall_clock_value_never_matters() {
        // This machine's wall clock is hours off; only its advances count.
        let mut c = StoreClock::default();
        let wall0 = 7_000_000_000;
        c.learn(stamp(1_000_000, at(0.0, wall0), at(10.0, wall0 + 10)));
        // 2.7 s later the store says 1_002_000: its clock was then in [1_002_000, 1_003_000 + rtt).
        c.learn(stamp(1_002_000, at(2_700.0, wall0 + 2_700), at(2_710.0, wall0 + 2_710)));
        let now = at(2_710.0, wall0 + 2_710);
        let (lo, hi) = (c.lower(now).unwrap(), c.upper(now).unwrap());
        // At least 1_000_000 + 2_700 × 0.999 from the first answer (more than the second's 1_002_000)...
        assert_eq!(lo, 1_002_697);
        // ...at most 1_001_010 + 2_700 × 1.001 = 1_003_712.7 from the first, 1_003_010.01 from the second.
        assert_eq!(hi, 1_003_011);
    }

    #[test]
    fn a_sleep_keeps_the_upper_bound_running_with_the_wall_clock() {
        let mut c = StoreClock::default();
        c.learn(stamp(1_000_000, at(0.0, 50_000), at(0.0, 50_000)));
        // The machine slept 60 s: the monotonic clock did not move, the wall clock did.
        let woken = at(5.0, 110_005);
        assert!(c.upper(woken).unwrap() >= 1_060_005);
        // The lower bound stays where the monotonic clock says (it is a lower bound: still true).
        assert!(c.lower(woken).unwrap() <= 1_000_005);
    }

    #[test]
    fn a_wall_clock_stepped_back_is_ignored_and_one_stepped_forward_only_costs_time() {
        let mut c = StoreClock::default();
        let wall0 = 5_000_000;
        c.learn(stamp(1_000_000, at(0.0, wall0), at(0.0, wall0)));
        // Stepped back an hour: the monotonic advance bounds it.
        let back = at(1_000.0, wall0 + 1_000 - 3_600_000);
        assert_eq!(c.upper(back), Some(1_002_001));
        // Stepped forward an hour: the upper bound jumps (a holder stops early, never late)...
        let fwd = at(1_000.0, wall0 + 1_000 + 3_600_000);
        assert!(c.upper(fwd).unwrap() > 4_600_000);
        // ...until the next answer narrows it again.
        assert_eq!(c.learn(stamp(1_001_000, fwd, at(1_010.0, wall0 + 3_601_010))), Learnt::Agrees);
        assert_eq!(c.upper(at(1_010.0, wall0 + 3_601_010)), Some(1_002_011));
    }

    #[test]
    fn answers_learnt_out_of_order_are_carried_forward_not_back() {
        let mut a = StoreClock::default();
        let first = stamp(1_000_000, at(0.0, 0), at(100.0, 100));
        let second = stamp(1_001_000, at(50.0, 50), at(1_200.0, 1_200));
        a.learn(first);
        a.learn(second);
        let mut b = StoreClock::default();
        b.learn(second);
        b.learn(first);
        let now = at(1_500.0, 1_500);
        assert_eq!(a.lower(now), b.lower(now));
        assert_eq!(a.upper(now), b.upper(now));
    }

    #[test]
    fn a_waiter_knows_the_monotonic_instant_the_store_clock_passes_a_time() {
        let mut c = StoreClock::default();
        assert_eq!(c.mono_when_at_least(5, at(0.0, 0)), None);
        c.learn(stamp(1_000_000, at(0.0, 0), at(0.0, 0)));
        let now = at(0.0, 0);
        assert_eq!(c.mono_when_at_least(999_000, now), Some(0.0));
        let t = c.mono_when_at_least(1_009_990, now).unwrap();
        assert!((t - 10_000.0).abs() < 1e-6, "{t}");
        assert_eq!(c.lower(at(t, 0)), Some(1_009_990));
        assert_eq!(c.served_at_least(now, Some(1_003_000)), Some(1_003_000));
        assert_eq!(c.served_at_least(now, None), Some(1_000_000));
        assert_eq!(StoreClock::default().served_at_least(now, None), None);
    }

    #[test]
    fn a_read_sent_before_the_latest_answer_is_judged_by_what_held_when_it_was_sent() {
        // A read sent at mono 0; while it is slow, another answer teaches the clock at mono 2_500.
        let mut c = StoreClock::default();
        c.learn(stamp(1_000_000, at(-10.0, 0), at(0.0, 10)));
        c.learn(stamp(1_002_000, at(2_490.0, 2_500), at(2_500.0, 2_510)));
        let sent = at(0.0, 10);
        // Carried back to the send, not taken as it stands at 2_500.
        let served = c.served_at_least(sent, None).unwrap();
        assert!(served <= 1_000_000, "{served}");
        assert!(c.upper(sent).unwrap() >= 1_000_000);
    }

    #[test]
    fn an_answer_beyond_what_the_clocks_allowed_says_so() {
        let mut c = StoreClock::default();
        assert_eq!(c.learn(stamp(1_000_000, at(0.0, 50_000), at(0.0, 50_000))), Learnt::First);
        assert_eq!(c.learn(stamp(1_001_000, at(1_000.0, 51_000), at(1_010.0, 51_010))), Learnt::Agrees);
        // Slept 60 s while the wall clock went back 60 s: neither clock moved, the store's did.
        assert_eq!(c.learn(stamp(1_061_000, at(1_020.0, 51_020), at(1_030.0, 51_030))), Learnt::Overran);
        assert_eq!(c.lower(at(1_030.0, 51_030)), Some(1_061_000), "the answer alone stands");
        assert_eq!(c.learn(stamp(1_000_000, at(1_040.0, 51_040), at(1_050.0, 51_050))), Learnt::Underran);
    }

    #[test]
    fn knowledge_carried_back_to_an_earlier_reading_loses_only_the_time_between() {
        // Learnt at mono 1_000, asked about mono 0 (a request sent before the answer): the store's clock was
        // then at least the lower bound less the most time that can have passed (1_000 ms at the rate
        // bound), and at most the upper bound less the least (1_010.01 - 999).
        let mut c = StoreClock::default();
        c.learn(stamp(1_000_000, at(990.0, 990), at(1_000.0, 1_000)));
        assert_eq!((c.lower(at(1_000.0, 1_000)), c.upper(at(1_000.0, 1_000))), (Some(1_000_000), Some(1_001_011)));
        let before = at(0.0, 0);
        assert_eq!(c.lower(before), Some(998_999));
        assert_eq!(c.upper(before), Some(1_000_012));
    }
}
