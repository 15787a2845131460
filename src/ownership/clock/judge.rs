//! The peer rule: whether a holder's lease, as one read found it, is dead.

use super::{rate_margin_ms, unchanged_dead_after_ms};
use crate::ownership::lease::RETIRED_EXPIRES_MS;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
