//! Teeth the random world does not produce (within a test's or a soak's budget) and a deterministic
//! scenario in tests/driver.rs catches instead, each with that test's name. Shared by `cargo test --test
//! sim` (`every_tooth_is_caught` leaves these teeth to the scenarios) and `scripts/soak` (which runs the
//! scenarios beside the seeds).

use celld_edge::ownership::teeth::Tooth;

/// `TrustFreshDate` needs a holder answered with a `Date` almost two seconds old and a peer with a fresh one
/// from an exact second, then a look at the very end of the holder's authority: 0 of 400 seeds after
/// issue 34's draws (2 of 200 before).
/// (`DeleteBeforeWritesSettle`, issue 34 B, was here until the close races drew writes that can land: over
/// a free cell, slow on their way, in lives that probe; `TrustOwnNodeId` (F9) and `MissingKeyedByEtagAlone`
/// (issue 21 A) until the quiet seeds of `workload::Quiet` drew their small worlds. The seeds catch them
/// now, docs/simulation.md; their scenarios stay in tests/driver.rs as regression tests.)
pub const CAUGHT_BY_SCENARIO: [(Tooth, &str); 1] =
    [(Tooth::TrustFreshDate, "split_brain::a_cached_date_world_catches_the_trust_fresh_date_tooth")];

/// The tests/driver.rs test (its path in that crate) that catches `tooth`, when a scenario does.
pub fn scenario_of(tooth: Tooth) -> Option<&'static str> {
    CAUGHT_BY_SCENARIO.iter().find(|(t, _)| *t == tooth).map(|(_, test)| *test)
}
