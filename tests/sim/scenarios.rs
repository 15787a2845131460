//! Teeth the random world does not produce (within a test's or a soak's budget) and a deterministic
//! scenario in tests/driver.rs catches instead, each with that test's name. Shared by `cargo test --test
//! sim` (`every_tooth_is_caught` leaves these teeth to the scenarios) and `scripts/soak` (which runs the
//! scenarios beside the seeds).

use celld_edge::ownership::teeth::Tooth;

/// `TrustOwnNodeId` (F9) needs a twin process, a late delete and a re-claim lined up inside one renewal
/// interval; issue 21's draws made that rarer than 1 in 1,500 seeds (docs/simulation.md).
/// `MissingKeyedByEtagAlone` (issue 21 A) needs a missing-lease sighting, a re-acquisition, a late delete
/// and a lookup of another cell with the same bytes, in that order.
/// `TrustFreshDate` needs a holder answered with a `Date` almost two seconds old and a peer with a fresh one
/// from an exact second, then a look at the very end of the holder's authority: 0 of 400 seeds after
/// issue 34's draws (2 of 200 before).
/// `DeleteBeforeWritesSettle` (issue 34 B) needs a write naming the node still in flight when close() deletes
/// the lease, and landing after the delete: 1 of 200 seeds when it was added, 0 of 400 after issue 36's
/// throttling changed the draws (and 0 of 400 with the close races drawn twice as often).
pub const CAUGHT_BY_SCENARIO: [(Tooth, &str); 4] = [
    (Tooth::TrustOwnNodeId, "split_brain::the_f9_world_catches_the_trust_own_node_id_tooth"),
    (Tooth::MissingKeyedByEtagAlone, "finding_as_world_catches_the_missing_keyed_by_etag_alone_tooth"),
    (Tooth::TrustFreshDate, "split_brain::a_cached_date_world_catches_the_trust_fresh_date_tooth"),
    (Tooth::DeleteBeforeWritesSettle, "lifecycle::a_close_racing_a_write_catches_the_delete_before_writes_settle_tooth"),
];

/// The tests/driver.rs test (its path in that crate) that catches `tooth`, when a scenario does.
pub fn scenario_of(tooth: Tooth) -> Option<&'static str> {
    CAUGHT_BY_SCENARIO.iter().find(|(t, _)| *t == tooth).map(|(_, test)| *test)
}
