//! Lease arithmetic (SPEC §5), pure: the holder's own deadlines (monotonic, and wall as the lease record
//! says), the peer rule on wall clocks, how long a missing lease must stay missing before peers may judge
//! its node dead, the renewal cadence and per-attempt bound, what a retired lease says, and when a waiting
//! claim next looks at a live holder. No clock is read here.

/// Renew this often.
pub fn renew_interval_ms(ttl_ms: u64) -> u64 {
    ttl_ms / 3
}

/// After a failed renewal attempt, try again this soon (not a whole interval later): an attempt that
/// timed out and a failed readback can otherwise push the next one past the deadline. `jitter` is any
/// random number; the wait is 100..=199 ms, never more than the interval.
pub fn renew_retry_ms(ttl_ms: u64, jitter: u64) -> u64 {
    (100 + jitter % 100).min(renew_interval_ms(ttl_ms).max(1))
}

/// The shortest bound of one renewal attempt (`renewal_timeout_ms`).
pub const MIN_RENEWAL_ROOM_MS: u64 = 250;

/// How long a renewal sent on time (ttl/3 after the lease write was sent) has for its round trip before
/// the authority of the lease it extends (`ttl - skew`) ends.
pub fn renewal_room_ms(ttl_ms: u64, max_skew_ms: u64) -> u64 {
    ttl_ms.saturating_sub(max_skew_ms).saturating_sub(renew_interval_ms(ttl_ms))
}

/// A configuration the protocol can keep: a renewal sent on time must have room for one attempt at its
/// shortest bound (250 ms) before the authority it extends ends; with less, every renewal that takes its
/// round trip's usual time lands after the lease had lapsed, and fences the node.
pub fn renewable(ttl_ms: u64, max_skew_ms: u64) -> bool {
    renewal_room_ms(ttl_ms, max_skew_ms) >= MIN_RENEWAL_ROOM_MS
}

/// The holder may act while `mono_now < deadline`; `anchor_mono` is sampled **before** the write is sent,
/// so the time the write spent in flight counts against the holder, never in its favour.
pub fn self_deadline(anchor_mono: f64, ttl_ms: u64, max_skew_ms: u64) -> f64 {
    anchor_mono + ttl_ms as f64 - max_skew_ms as f64
}

/// The holder may also act only while its wall clock is below this, for the lease record it wrote: a
/// monotonic clock stops while the machine sleeps, the wall clock (and the peers) do not.
pub fn wall_deadline(expires_ms: u64, max_skew_ms: u64) -> u64 {
    expires_ms.saturating_sub(max_skew_ms)
}

/// What remains of the holder's authority, the smaller of its two deadlines (never negative).
pub fn remaining_ms(mono_deadline: f64, mono_now: f64, wall_deadline: u64, wall_now: u64) -> f64 {
    let wall_left = wall_deadline.saturating_sub(wall_now) as f64;
    (mono_deadline - mono_now).min(wall_left).max(0.0)
}

/// A peer judges a lease dead only once `expires_ms + skew <= wall_now`.
pub fn peer_dead(expires_ms: u64, max_skew_ms: u64, wall_now_ms: u64) -> bool {
    expires_ms.checked_add(max_skew_ms).is_some_and(|dead_at| dead_at <= wall_now_ms)
}

/// A missing lease proves its node dead only once it has stayed missing this long, on the judge's own
/// monotonic clock from when it first saw it missing: celld's dead-node clean-up deletes lease records
/// with no condition, and that delete can land after the node installed a fresh lease.
pub fn missing_dead(missing_for_ms: f64, ttl_ms: u64, max_skew_ms: u64) -> bool {
    missing_for_ms >= ttl_ms.saturating_add(max_skew_ms) as f64
}

/// `expires_ms` of a lease retired by `close()`: dead by every peer's rule at once, whatever its clock
/// (celld's dead-node clean-up writes the same value into the copies it fences).
pub const RETIRED_EXPIRES_MS: u64 = 0;

/// The wall instant at which a peer may first judge a lease expiring at `expires_ms` dead: a waiting
/// claim sleeps until then, not a millisecond less (`peer_dead` turns true exactly there).
pub fn judged_dead_at(expires_ms: u64, max_skew_ms: u64) -> u64 {
    expires_ms.saturating_add(max_skew_ms)
}

/// One renewal attempt is aborted after half the remaining authority, clamped to 250..=2500 ms.
pub fn renewal_timeout_ms(remaining_ms: f64) -> u32 {
    (remaining_ms / 2.0).max(0.0).clamp(MIN_RENEWAL_ROOM_MS as f64, 2500.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_deadline_counts_from_before_the_write_and_keeps_the_skew() {
        assert_eq!(self_deadline(1000.0, 10_000, 1_000), 10_000.0);
        assert_eq!(self_deadline(0.5, 3_000, 0), 3_000.5);
        assert_eq!(wall_deadline(50_000, 1_000), 49_000);
        assert_eq!(wall_deadline(0, 1_000), 0, "a tombstone (expires 0) gives no authority");
    }

    #[test]
    fn remaining_authority_is_the_smaller_of_both_deadlines() {
        assert_eq!(remaining_ms(10_000.0, 4_000.0, 50_000, 45_000), 5_000.0);
        // The monotonic clock stopped (machine sleep): the wall deadline has passed.
        assert_eq!(remaining_ms(10_000.0, 4_000.0, 50_000, 60_000), 0.0);
        assert_eq!(remaining_ms(10_000.0, 11_000.0, 50_000, 0), 0.0);
    }

    #[test]
    fn peer_rule_at_its_boundaries() {
        let (expires, skew) = (50_000, 1_000);
        assert!(!peer_dead(expires, skew, 50_000)); // at expiry: still within the skew margin
        assert!(!peer_dead(expires, skew, 50_999));
        assert!(peer_dead(expires, skew, 51_000)); // exactly at expiry + skew: dead
        assert!(peer_dead(expires, 0, 50_000));
        assert!(!peer_dead(u64::MAX, skew, u64::MAX)); // no overflow into "dead"
    }

    #[test]
    fn a_waiting_claim_wakes_exactly_when_the_peer_rule_turns() {
        let (expires, skew) = (50_000, 1_000);
        let at = judged_dead_at(expires, skew);
        assert_eq!(at, 51_000);
        assert!(!peer_dead(expires, skew, at - 1) && peer_dead(expires, skew, at));
        assert!(peer_dead(RETIRED_EXPIRES_MS, skew, skew), "a retired lease is dead to any clock past the skew");
        assert_eq!(judged_dead_at(u64::MAX, skew), u64::MAX);
    }

    #[test]
    fn a_missing_lease_is_dead_only_after_ttl_plus_skew() {
        assert!(!missing_dead(0.0, 3_000, 400));
        assert!(!missing_dead(3_399.9, 3_000, 400));
        assert!(missing_dead(3_400.0, 3_000, 400));
    }

    #[test]
    fn renewal_bound_is_half_the_remaining_authority_clamped() {
        assert_eq!(renewal_timeout_ms(10_000.0), 2_500);
        assert_eq!(renewal_timeout_ms(3_000.0), 1_500);
        assert_eq!(renewal_timeout_ms(300.0), 250);
        assert_eq!(renewal_timeout_ms(0.0), 250);
        assert_eq!(renew_interval_ms(10_000), 3_333);
    }

    #[test]
    fn retries_are_prompt_and_configurations_must_be_renewable() {
        assert_eq!(renew_retry_ms(10_000, 0), 100);
        assert_eq!(renew_retry_ms(10_000, 1_234), 134);
        assert_eq!(renew_retry_ms(150, 99), 50, "never longer than the interval");
        assert!(renewable(10_000, 1_000));
        assert!(renewable(3_000, 400));
        // ttl/3 = 1000 >= ttl - skew = 1000: every renewal would land after authority ended.
        assert!(!renewable(3_000, 2_000));
        assert!(!renewable(1_000, 1_000));
        // Issue 21 F: 1 ms of room for the renewal's round trip.
        assert!(!renewable(3_000, 1_999));
        assert!(renewable(3_000, 1_750) && !renewable(3_000, 1_751));
        assert!(renewable(600, 100), "300 ms of room");
    }
}
