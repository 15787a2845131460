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

mod holder;
mod judge;
mod offset;
mod sightings;
mod store;

pub use holder::{authority_left_ms, expires_on_store_clock};
pub use judge::{judge, Found, Judgement, LeaseTerms};
pub use offset::{OffsetWatch, OFFSET_SLACK_MS, READ_TRIES, TIGHT_READ_MS};
pub use sightings::{Read, Sightings, Version, SIGHTINGS_REMEMBERED};
pub use store::{Learnt, Stamp, StoreClock, DATE_SECOND_MS, DATE_SPAN_MS};

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

#[cfg(test)]
fn at(mono: f64, wall: u64) -> Reading {
    Reading { mono, wall }
}

#[cfg(test)]
/// An answer from a store whose `Date` is always its current second: the tests' arithmetic in round
/// figures (the span is an input; `cached_dates_widen_the_upper_bound_by_a_second` checks the default).
fn stamp(date_ms: u64, sent: Reading, arrived: Reading) -> Stamp {
    Stamp { date_ms, sent, arrived, span_ms: DATE_SECOND_MS }
}
