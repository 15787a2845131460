//! Backing off from a store that throttles (SPEC §6, "Under load"): 429 and 503 SlowDown turn a request
//! away before it is served, so the request is sent again later, never at once. Pure arithmetic: the
//! pause before the `attempt`-th resend is drawn with full jitter (uniform in `0..=window`, the window
//! doubling from `BASE_MS` up to `CAP_MS`), from a random number and a time left that the caller reads
//! from its `Env`. It must never read a clock or draw randomness itself.

/// The first window: R2 takes one write per second per key, so a few hundred ms is the useful scale.
pub const BASE_MS: u32 = 250;
/// The widest window: beyond it a caller waits longer than any store's per-key limit asks.
pub const CAP_MS: u32 = 4000;

/// The pause before resend `attempt` (1 for the first resend) with full jitter: `random` picked uniformly
/// in `1..=window`, and never longer than `left_ms` (what the caller's deadline leaves).
pub fn full_jitter_ms(attempt: u32, random: u64, left_ms: u64) -> u32 {
    let window = u64::from(BASE_MS).saturating_mul(1u64 << attempt.saturating_sub(1).min(16)).min(u64::from(CAP_MS));
    let pause = random % window + 1;
    pause.min(left_ms) as u32
}

/// Whether a resend is worth it: the pause it needs must leave the request room to be answered within
/// the caller's deadline (`left_ms` after the pause, at least `room_ms`).
pub fn worth_resending(pause_ms: u32, left_ms: u64, room_ms: u64) -> bool {
    left_ms >= u64::from(pause_ms) + room_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_double_to_the_cap_and_the_pause_is_uniform_within() {
        assert_eq!(full_jitter_ms(1, 0, u64::MAX), 1);
        assert_eq!(full_jitter_ms(1, 249, u64::MAX), 250);
        assert_eq!(full_jitter_ms(1, 250, u64::MAX), 1, "wraps within the window");
        assert_eq!(full_jitter_ms(2, 499, u64::MAX), 500);
        assert_eq!(full_jitter_ms(3, 999, u64::MAX), 1000);
        assert_eq!(full_jitter_ms(5, 3999, u64::MAX), 4000);
        assert_eq!(full_jitter_ms(9, 3999, u64::MAX), 4000, "capped");
        assert_eq!(full_jitter_ms(u32::MAX, u64::MAX, u64::MAX), (u64::MAX % 4000 + 1) as u32);
        assert_eq!(full_jitter_ms(0, 7, u64::MAX), 8, "attempt 0 reads as the first");
    }

    #[test]
    fn the_deadline_bounds_the_pause_and_whether_to_resend() {
        assert_eq!(full_jitter_ms(4, 1999, 300), 300);
        assert_eq!(full_jitter_ms(4, 1999, 0), 0);
        assert!(worth_resending(300, 1300, 1000));
        assert!(!worth_resending(300, 1299, 1000));
    }
}
