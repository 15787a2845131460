//! Lease arithmetic (SPEC §5), pure: the renewal cadence and per-attempt bound, which configurations can
//! be renewed, and what a retired lease says. The holder's deadline and the peer rule are `clock`'s. No
//! clock is read here.

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

/// `expires_ms` of a lease retired by `close()`: dead by every peer's rule at once, whatever its clock
/// (celld's dead-node clean-up writes the same value into the copies it fences).
pub const RETIRED_EXPIRES_MS: u64 = 0;

/// One renewal attempt is aborted after half the remaining authority, clamped to 250..=2500 ms.
pub fn renewal_timeout_ms(remaining_ms: f64) -> u32 {
    (remaining_ms / 2.0).max(0.0).clamp(MIN_RENEWAL_ROOM_MS as f64, 2500.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

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
