//! Lease arithmetic (SPEC §5), pure: the holder's own deadline on its monotonic clock, the peer rule on
//! wall clocks, and the renewal cadence and per-attempt bound. No clock is read here.

/// Renew this often.
pub fn renew_interval_ms(ttl_ms: u64) -> u64 {
    ttl_ms / 3
}

/// The holder may act while `mono_now < deadline`; `anchor_mono` is sampled **before** the write is sent,
/// so the time the write spent in flight counts against the holder, never in its favour.
pub fn self_deadline(anchor_mono: f64, ttl_ms: u64, max_skew_ms: u64) -> f64 {
    anchor_mono + ttl_ms as f64 - max_skew_ms as f64
}

/// A peer judges a lease dead only once `expires_ms + skew <= wall_now`.
pub fn peer_dead(expires_ms: u64, max_skew_ms: u64, wall_now_ms: u64) -> bool {
    expires_ms.checked_add(max_skew_ms).is_some_and(|dead_at| dead_at <= wall_now_ms)
}

/// One renewal attempt is aborted after half the remaining authority, clamped to 250..=2500 ms.
pub fn renewal_timeout_ms(deadline: f64, mono_now: f64) -> u32 {
    let half = ((deadline - mono_now) / 2.0).max(0.0);
    half.clamp(250.0, 2500.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_deadline_counts_from_before_the_write_and_keeps_the_skew() {
        assert_eq!(self_deadline(1000.0, 10_000, 1_000), 10_000.0);
        assert_eq!(self_deadline(0.5, 3_000, 0), 3_000.5);
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
    fn renewal_bound_is_half_the_remaining_authority_clamped() {
        assert_eq!(renewal_timeout_ms(10_000.0, 0.0), 2_500);
        assert_eq!(renewal_timeout_ms(3_000.0, 0.0), 1_500);
        assert_eq!(renewal_timeout_ms(300.0, 0.0), 250);
        assert_eq!(renewal_timeout_ms(0.0, 500.0), 250);
        assert_eq!(renew_interval_ms(10_000), 3_333);
    }
}
