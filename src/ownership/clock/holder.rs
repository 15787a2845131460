//! The holder's side: the expiry it writes, and what remains of its authority.

use super::{elapsed_at_most, Reading, StoreClock};

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
    use crate::ownership::clock::{at, stamp};

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
}
