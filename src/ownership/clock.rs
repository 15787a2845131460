//! Clock-proof judgement of leases (SPEC §5; the rule and its proof are in docs/protocol.md, "Clocks").
//! Pure: no clock is read here, every reading comes in as an argument.
//!
//! - [`StoreClock`]: what this instance knows of the store's clock, learnt from the `Date` headers of its
//!   answers. Bounds, not a guess: they stay true whichever one of two things happens between two answers —
//!   the local wall clock is stepped (either way), or the machine sleeps (the monotonic clock stops). Both
//!   in one interval can break them; docs/protocol.md says what that costs.
//! - [`Sightings`]: which version of each peer's lease this instance has seen (its ETag, or its absence
//!   for one cell's owner-record version), and since when: the monotonic instant the first answer that
//!   showed it *arrived*. A version still shown by a read *sent* `ttl + rate_margin(ttl)` later is dead.
//! - [`judge`]: a lease read now is dead by that observation, or by the store's clock alone (a read served
//!   after its `expires_ms` on the store's clock); otherwise it says when it may next be judged.
//!
//! No local wall clock decides anything here: it only bridges machine sleeps in [`StoreClock`].

use std::collections::VecDeque;

use crate::ownership::lease::RETIRED_EXPIRES_MS;

/// How far from true time any clock this rule relies on may run, as a rate (0.1 %): the store's clock,
/// and this machine's monotonic and wall clocks between two readings. Quartz clocks are off by about
/// 50 ppm, and NTP slews a clock by at most 500 ppm.
pub const RATE: f64 = 1e-3;

/// The margin a watcher adds to a holder's ttl for the rate of both monotonic clocks: the holder's may run
/// slow by [`RATE`] (its ttl then lasts longer), the watcher's fast (its wait then passes sooner); 0.25 %
/// covers `(1 + RATE) / (1 - RATE) - 1`, rounded up to the millisecond.
pub fn rate_margin_ms(ttl_ms: u64) -> u64 {
    ttl_ms.div_ceil(400)
}

/// How long a watcher must have seen one version of a lease written with `ttl_ms` unchanged before it is
/// dead: from the arrival of the first answer that showed it to the send of a read that still shows it.
pub fn unchanged_dead_after_ms(ttl_ms: u64) -> u64 {
    ttl_ms.saturating_add(rate_margin_ms(ttl_ms))
}

/// Both local clocks read at one moment: monotonic ms, and wall Unix ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub mono: f64,
    pub wall: u64,
}

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

/// At least as much true time as passed between two readings: the larger advance of the two clocks (the
/// monotonic clock stops while the machine sleeps; the wall clock may be stepped back), stretched by
/// [`RATE`]. Wrong only when the machine slept *and* its wall clock was stepped back in between.
fn elapsed_at_most(from: Reading, to: Reading) -> f64 {
    let wall = to.wall as f64 - from.wall as f64;
    (to.mono - from.mono).max(wall).max(0.0) * (1.0 + RATE)
}

/// At most as much true time as passed: the monotonic advance alone (a sleep only adds time; the wall
/// clock proves nothing), shrunk by [`RATE`].
fn elapsed_at_least(from: Reading, to: Reading) -> f64 {
    (to.mono - from.mono).max(0.0) * (1.0 - RATE)
}

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

/// What a lease record says that the judgement needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTerms {
    pub expires_ms: u64,
    /// The holder's `leaseTtlMs` as it wrote it (`ttl_ms`): it acts at most this long after sending the
    /// write, on its monotonic clock. `None` for leases celld or an earlier release of this library wrote.
    pub ttl_ms: Option<u64>,
    /// Whether `expires_ms` is on the store's clock (`clock: "store"`): the writer had learnt it from
    /// `Date` headers. Otherwise it is on the writer's own wall clock.
    pub store_clock: bool,
}

/// A holder's lease as one read found it, with what this instance had seen of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Found {
    /// Present, its version seen unchanged for `unchanged_ms` (what [`Sightings::saw`] returned); `served`:
    /// the store's clock when it served the read was at least this ([`StoreClock::served_at_least`]).
    Present { terms: LeaseTerms, unchanged_ms: f64, served: Option<u64> },
    /// Absent, for the cell's owner-record version it was judged for, for this long.
    Missing { unchanged_ms: f64 },
}

/// The verdict on a holder's lease.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judgement {
    Dead,
    /// Not (yet) provably dead. `observe_after_ms`: a read sent this long after the judged one may find it
    /// dead by observation if it still shows the same version (`None`: never by observation — a lease with
    /// no `ttl_ms`). `store_after`: a read served once the store's clock is at this instant (Unix ms) finds
    /// it dead by the store's clock, if it still shows the same version.
    Live { observe_after_ms: Option<f64>, store_after: Option<u64> },
}

/// The peer rule (SPEC §5), clock-proof. `own_ttl_ms` bounds how long a holder whose lease is missing may
/// still act (its ttl is unknown: leases of one bucket are assumed written with at most this ttl plus
/// `max_skew_ms`, as before); `max_skew_ms` is how far a writer's wall clock (celld's, or an earlier
/// release's) may be from the store's, for leases whose `expires_ms` is on a wall clock.
///
/// - Retired (`expires_ms: 0`, written by `close()` or celld's clean-up after the holder stopped): dead.
/// - Present, written by this release (`ttl_ms`): dead once seen unchanged for `ttl_ms + rate_margin`, or
///   once served at or after `expires_ms + rate_margin` by the store's clock when the holder wrote it on the
///   store's clock.
/// - Present, with no `ttl_ms` (celld's, an earlier release's): dead once served at or after
///   `expires_ms + max_skew_ms` by the store's clock; the writer's own clock is within the skew of it.
/// - Missing: dead once missing, for the same owner-record version, for `own_ttl_ms + max_skew_ms`.
pub fn judge(found: Found, own_ttl_ms: u64, max_skew_ms: u64) -> Judgement {
    match found {
        Found::Present { terms, unchanged_ms, served } => {
            let observe_after = terms.ttl_ms.map(|ttl| unchanged_dead_after_ms(ttl) as f64 - unchanged_ms);
            let store_after = match (terms.ttl_ms, terms.store_clock) {
                (Some(ttl), true) => Some(terms.expires_ms.saturating_add(rate_margin_ms(ttl))),
                (Some(_), false) => None,
                (None, _) => Some(terms.expires_ms.saturating_add(max_skew_ms)),
            };
            let by_store = matches!((store_after, served), (Some(at), Some(served)) if served >= at);
            // A retired lease (`close()`, or celld's tombstone) was written after its holder stopped.
            let retired = terms.expires_ms == RETIRED_EXPIRES_MS;
            if retired || by_store || observe_after.is_some_and(|ms| ms <= 0.0) {
                Judgement::Dead
            } else {
                Judgement::Live { observe_after_ms: observe_after, store_after }
            }
        }
        Found::Missing { unchanged_ms } => {
            let needed = own_ttl_ms.saturating_add(max_skew_ms) as f64;
            if unchanged_ms >= needed {
                Judgement::Dead
            } else {
                Judgement::Live { observe_after_ms: Some(needed - unchanged_ms), store_after: None }
            }
        }
    }
}

/// The `expires_ms` a holder writes into a lease whose write is sent at `anchor`: its ttl after the
/// store's clock at that moment, taken at its upper bound (celld nodes, which judge it with their own wall
/// clocks, and the inspector then never see it end before the holder stops, [`authority_left_ms`]).
/// `None` while the store's clock is unknown: the holder then writes its wall clock's and says so (no
/// `clock: "store"`), and peers judge that lease by observation alone.
pub fn expires_on_store_clock(clock: &StoreClock, anchor: Reading, ttl_ms: u64) -> Option<u64> {
    clock.upper(anchor).map(|now| now.saturating_add(ttl_ms))
}

/// What remains of a holder's authority (ms, never negative) for a lease whose write was sent at `anchor`:
/// `ttl - skew` less the time passed since, counted as [`elapsed_at_most`] does — the larger advance of the
/// monotonic and the wall clock. The monotonic clock stops while the machine sleeps and the wall clock (its
/// advance, never its value) keeps counting; a wall clock stepped back is outrun by the monotonic one. This is
/// SPEC §5's "ends also when its estimate of the store's clock passes `expires_ms` minus a margin", measured
/// from the anchor: that estimate is the store's clock at the anchor (at most `expires_ms - ttl`) plus this
/// elapsed time, so it passes `expires_ms - skew` exactly when this reaches 0.
pub fn authority_left_ms(anchor: Reading, now: Reading, ttl_ms: u64, max_skew_ms: u64) -> f64 {
    (ttl_ms.saturating_sub(max_skew_ms) as f64 - elapsed_at_most(anchor, now)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(mono: f64, wall: u64) -> Reading {
        Reading { mono, wall }
    }

    /// An answer from a store whose `Date` is always its current second: the arithmetic below in round
    /// figures (the span is an input; `cached_dates_widen_the_upper_bound_by_a_second` checks the default).
    fn stamp(date_ms: u64, sent: Reading, arrived: Reading) -> Stamp {
        Stamp { date_ms, sent, arrived, span_ms: DATE_SECOND_MS }
    }

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

    fn ours(expires_ms: u64) -> LeaseTerms {
        LeaseTerms { expires_ms, ttl_ms: Some(3_000), store_clock: true }
    }

    #[test]
    fn a_lease_of_ours_is_dead_by_observation_or_by_the_store_clock() {
        let present = |terms, unchanged_ms, served| Found::Present { terms, unchanged_ms, served };
        // W = 3000 + 8.
        assert_eq!(unchanged_dead_after_ms(3_000), 3_008);
        assert_eq!(
            judge(present(ours(50_000), 0.0, Some(40_000)), 3_000, 400),
            Judgement::Live { observe_after_ms: Some(3_008.0), store_after: Some(50_008) }
        );
        assert_eq!(
            judge(present(ours(50_000), 3_007.0, None), 3_000, 400),
            Judgement::Live { observe_after_ms: Some(1.0), store_after: Some(50_008) }
        );
        assert_eq!(judge(present(ours(50_000), 3_008.0, None), 3_000, 400), Judgement::Dead);
        assert_eq!(judge(present(ours(50_000), 0.0, Some(50_008)), 3_000, 400), Judgement::Dead);
        assert!(matches!(judge(present(ours(50_000), 0.0, Some(50_007)), 3_000, 400), Judgement::Live { .. }));
        assert_eq!(judge(present(ours(0), 0.0, None), 3_000, 400), Judgement::Dead, "retired");
        // The holder's own ttl counts, not the judge's.
        let long = LeaseTerms { ttl_ms: Some(60_000), ..ours(u64::MAX) };
        assert!(matches!(judge(present(long, 10_000.0, None), 3_000, 400), Judgement::Live { .. }));
        // expires on the writer's wall clock: only observation can tell.
        let walled = LeaseTerms { store_clock: false, ..ours(7) };
        assert_eq!(
            judge(present(walled, 0.0, Some(u64::MAX)), 3_000, 400),
            Judgement::Live { observe_after_ms: Some(3_008.0), store_after: None }
        );
    }

    #[test]
    fn celld_leases_are_judged_by_the_store_clock_with_the_skew_margin() {
        let celld = LeaseTerms { expires_ms: 50_000, ttl_ms: None, store_clock: false };
        let found = |served| Found::Present { terms: celld, unchanged_ms: 1e12, served };
        assert_eq!(judge(found(Some(50_399)), 3_000, 400), Judgement::Live { observe_after_ms: None, store_after: Some(50_400) });
        assert_eq!(judge(found(Some(50_400)), 3_000, 400), Judgement::Dead);
        assert!(matches!(judge(found(None), 3_000, 400), Judgement::Live { .. }), "no store clock, no verdict");
        let tombstone = LeaseTerms { expires_ms: 0, ..celld };
        assert_eq!(judge(Found::Present { terms: tombstone, unchanged_ms: 0.0, served: None }, 3_000, 400), Judgement::Dead);
    }

    #[test]
    fn a_missing_lease_is_dead_after_ttl_plus_skew_of_absence() {
        assert_eq!(
            judge(Found::Missing { unchanged_ms: 3_000.0 }, 3_000, 400),
            Judgement::Live { observe_after_ms: Some(400.0), store_after: None }
        );
        assert_eq!(judge(Found::Missing { unchanged_ms: 3_400.0 }, 3_000, 400), Judgement::Dead);
    }

    #[test]
    fn the_holder_writes_its_expiry_on_the_store_clock_and_stops_by_either_clock() {
        let mut c = StoreClock::default();
        let wall0 = 9_999_999_999; // hours off: its value never matters
        let anchor = at(0.0, wall0);
        assert_eq!(expires_on_store_clock(&c, anchor, 3_000), None);
        c.learn(stamp(1_000_000, at(-20.0, wall0 - 20), anchor));
        assert_eq!(expires_on_store_clock(&c, anchor, 3_000), Some(1_004_021));
        // ttl - skew = 2600, counted by the monotonic clock...
        assert_eq!(authority_left_ms(anchor, at(1_000.0, wall0 + 1_000), 3_000, 400), 2_600.0 - 1_001.0);
        assert_eq!(authority_left_ms(anchor, at(2_600.0, wall0 + 2_600), 3_000, 400), 0.0);
        // ...with the wall clock stepped back an hour (the monotonic clock counts)...
        assert_eq!(authority_left_ms(anchor, at(2_600.0, wall0 - 3_600_000), 3_000, 400), 0.0);
        // ...and across a machine sleep, when only the wall clock moved.
        assert_eq!(authority_left_ms(anchor, at(5.0, wall0 + 5_000), 3_000, 400), 0.0);
        // A wall clock stepped forward ends it early: never late.
        assert_eq!(authority_left_ms(anchor, at(5.0, wall0 + 3_600_000), 3_000, 400), 0.0);
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
}
