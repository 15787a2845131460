//! The protocol's safety rules, by name: one value, all on in production, each field read where its rule
//! is applied. Tests (the `teeth` feature) turn one off with `Rules::without(tooth)` to show that the
//! simulation's checker catches the bug the rule prevents; nothing else can build a `Rules` other than
//! `Rules::ALL`. A rule must never be read anywhere but where it is applied.

/// Every safety rule, on (`true`) or turned off by a tooth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// A conditional write answered 5xx or timed out is settled by reading back, never resent with its answer taken at face value.
    pub(crate) never_resend_cas: bool,
    /// A 409 ConditionalRequestConflict says nothing about the owner: the claim reads again.
    pub(crate) reread_after_conflict: bool,
    /// A lease written on a wall clock (celld's) is dead only at `expires_ms + maxClockSkewMs` by the store's clock.
    pub(crate) peer_skew_margin: bool,
    /// This node's own deadlines are anchored before its lease write is sent.
    pub(crate) anchor_before_write: bool,
    /// The overrun counter a lease's authority is voided by is read at its anchor too, not at its answer.
    pub(crate) anchor_every_clock: bool,
    /// A renewal answered after the lease's authority ended is not installed: it fences.
    pub(crate) refuse_late_renewal: bool,
    /// An ambiguous conditional write is settled by reading back, never assumed applied.
    pub(crate) settle_by_readback: bool,
    /// A refused claim that started without a read reads before answering.
    pub(crate) read_before_rejecting: bool,
    /// A dead holder whose celld node log is not sealed is not taken over.
    pub(crate) respect_node_log: bool,
    /// celld's fleet marker is read before anything is written.
    pub(crate) check_fleet_marker: bool,
    /// A claim counts only under the lease it was sent under.
    pub(crate) claim_under_its_lease: bool,
    /// A release needs this instance's valid lease.
    pub(crate) release_needs_lease: bool,
    /// Authority also counts the wall clock's advance since the anchor (a sleep stops the monotonic clock),
    /// and ends when the wall clock's lead over the monotonic clock moves (`OffsetWatch`).
    pub(crate) wall_deadline: bool,
    /// The offset watch allows for how long a reading took (its width: the wall clock read between two reads
    /// of the monotonic clock, `Store::clocks_read`), which a preempted thread widens.
    pub(crate) read_width_counts: bool,
    /// A missing lease proves death only once it stayed missing `ttl + skew`.
    pub(crate) missing_lease_waits: bool,
    /// A missing lease is remembered per cell and owner-record version, never under the owner record's ETag
    /// alone (celld's records carry no nonce: two cells of one holder at one epoch share bytes and ETag).
    pub(crate) missing_keyed_by_cell: bool,
    /// One lease write at a time per instance, shared by every caller.
    pub(crate) one_lease_write: bool,
    /// One claim per cell at a time per instance, shared; answers never replace a newer claim.
    pub(crate) one_claim_per_cell: bool,
    /// A body that does not decode is read again before it is called corrupt.
    pub(crate) reread_undecodable: bool,
    /// `close()` ends authority and every claim at once.
    pub(crate) close_ends_authority: bool,
    /// `close()` settles every owner-record write naming this node (waits for it, or keeps the lease when its
    /// caller dropped it) before it deletes the lease.
    pub(crate) close_settles_writes: bool,
    /// `close()` retires only a lease record this instance wrote.
    pub(crate) retire_own_lease_only: bool,
    /// A record naming this node that another process of the id wrote is this node's only while this instance's lease is still its own.
    pub(crate) confirm_own_node_id: bool,
    /// `close()` is checked when each write is sent, not only when an operation starts.
    pub(crate) no_write_after_close: bool,
    /// An older lease record of ours put back by another writer is never adopted: it fences.
    pub(crate) refuse_restored_lease: bool,
    /// A 412/404 answer is checked for this write's own nonce (a request delivered twice).
    pub(crate) look_for_own_nonce: bool,
    /// A 412/404 answer to a conditional DELETE is read back (a DELETE delivered twice), never reported as "changed".
    pub(crate) settle_deletes: bool,
    /// A due credentials refresh runs beside the renewal loop, never in its way.
    pub(crate) refresh_beside_renewal: bool,
    /// A peer's lease is judged by the store's clock (its answers' `Date`), never this machine's wall clock.
    pub(crate) judge_by_store_clock: bool,
    /// A lease version is seen unchanged from the arrival of the answer that first showed it, not its send.
    pub(crate) count_from_arrival: bool,
    /// A `Date` may be a second older than the second it names (a store that caches it): `DATE_SPAN_MS`.
    pub(crate) date_may_lag: bool,
}

impl Rules {
    /// Production: every rule on.
    pub const ALL: Rules = Rules {
        never_resend_cas: true,
        reread_after_conflict: true,
        peer_skew_margin: true,
        anchor_before_write: true,
        anchor_every_clock: true,
        refuse_late_renewal: true,
        settle_by_readback: true,
        read_before_rejecting: true,
        respect_node_log: true,
        check_fleet_marker: true,
        claim_under_its_lease: true,
        release_needs_lease: true,
        wall_deadline: true,
        read_width_counts: true,
        missing_lease_waits: true,
        missing_keyed_by_cell: true,
        one_lease_write: true,
        one_claim_per_cell: true,
        reread_undecodable: true,
        close_ends_authority: true,
        close_settles_writes: true,
        retire_own_lease_only: true,
        confirm_own_node_id: true,
        no_write_after_close: true,
        refuse_restored_lease: true,
        look_for_own_nonce: true,
        settle_deletes: true,
        refresh_beside_renewal: true,
        judge_by_store_clock: true,
        count_from_arrival: true,
        date_may_lag: true,
    };
}

impl Default for Rules {
    fn default() -> Self {
        Rules::ALL
    }
}

#[cfg(feature = "teeth")]
impl Rules {
    /// Every rule but the one `tooth` breaks.
    pub fn without(tooth: crate::ownership::teeth::Tooth) -> Rules {
        use crate::ownership::teeth::Tooth;
        let mut rules = Rules::ALL;
        match tooth {
            Tooth::RetryCasOnAmbiguity => rules.never_resend_cas = false,
            Tooth::ConflictMeansOwned => rules.reread_after_conflict = false,
            Tooth::NoPeerSkewMargin => rules.peer_skew_margin = false,
            Tooth::AnchorAfterWrite => rules.anchor_before_write = false,
            Tooth::CounterAfterAnswer => rules.anchor_every_clock = false,
            Tooth::InstallLateRenewal => rules.refuse_late_renewal = false,
            Tooth::SkipReadback => rules.settle_by_readback = false,
            Tooth::AnswerFromKnown => rules.read_before_rejecting = false,
            Tooth::IgnoreNodeLog => rules.respect_node_log = false,
            Tooth::SkipFleetMarker => rules.check_fleet_marker = false,
            Tooth::ClaimUnderAnyLease => rules.claim_under_its_lease = false,
            Tooth::ReleaseWithoutLease => rules.release_needs_lease = false,
            Tooth::NoWallDeadline => rules.wall_deadline = false,
            Tooth::IgnoreReadWidth => rules.read_width_counts = false,
            Tooth::MissingLeaseIsDead => rules.missing_lease_waits = false,
            Tooth::MissingKeyedByEtagAlone => rules.missing_keyed_by_cell = false,
            Tooth::ParallelLeaseWrites => rules.one_lease_write = false,
            Tooth::ClaimsOutOfOrder => rules.one_claim_per_cell = false,
            Tooth::DecodeReadbackOnce => rules.reread_undecodable = false,
            Tooth::KeepAuthorityAfterClose => rules.close_ends_authority = false,
            Tooth::RetireUnconditionally => rules.retire_own_lease_only = false,
            Tooth::DeleteBeforeWritesSettle => rules.close_settles_writes = false,
            Tooth::TrustOwnNodeId => rules.confirm_own_node_id = false,
            Tooth::SendAfterClose => rules.no_write_after_close = false,
            Tooth::AdoptRestoredLease => rules.refuse_restored_lease = false,
            Tooth::TrustFirstRejection => rules.look_for_own_nonce = false,
            Tooth::DeleteRejectionAtFaceValue => rules.settle_deletes = false,
            Tooth::RenewalWaitsOnCredentials => rules.refresh_beside_renewal = false,
            Tooth::JudgeByWallClock => rules.judge_by_store_clock = false,
            Tooth::CountFromSend => rules.count_from_arrival = false,
            Tooth::TrustFreshDate => rules.date_may_lag = false,
        }
        rules
    }
}

#[cfg(all(test, feature = "teeth"))]
mod tests {
    use super::*;
    use crate::ownership::teeth::Tooth;

    #[test]
    fn each_tooth_turns_off_exactly_one_rule() {
        let mut seen = Vec::new();
        for tooth in Tooth::ALL {
            let rules = Rules::without(tooth);
            assert_ne!(rules, Rules::ALL, "{tooth:?} turns off no rule");
            assert!(!seen.contains(&rules), "{tooth:?} turns off the rule of another tooth");
            seen.push(rules);
        }
    }
}
