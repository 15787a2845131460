//! Deliberately broken variants of the protocol ("teeth"), compiled only with the `teeth` feature (tests
//! and examples). Each one removes a single safety rule; the simulation's checker must catch every one,
//! which is what shows the checker can fail at all.

/// One removed safety rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tooth {
    /// Resend a conditional PUT after a 5xx/timeout and take the resend's answer at face value.
    RetryCasOnAmbiguity,
    /// Treat 409 ConditionalRequestConflict as "someone else owns it", without re-reading.
    ConflictMeansOwned,
    /// Judge a lease written on a wall clock (celld's) dead at `expires_ms`, without the skew margin.
    NoPeerSkewMargin,
    /// Anchor this node's own deadlines (monotonic and wall) when the lease write returns, not before it is
    /// sent.
    AnchorAfterWrite,
    /// Accept a renewal that landed after the previous lease's validity had ended.
    InstallLateRenewal,
    /// Assume an ambiguous conditional write applied, without reading back.
    SkipReadback,
    /// Answer a refused claim that started without a read from the version seen earlier, without reading.
    AnswerFromKnown,
    /// Ignore celld's folded node log: take over a dead holder whose log is not sealed.
    IgnoreNodeLog,
    /// Write without reading the fleet's backend marker first.
    SkipFleetMarker,
    /// Count a claim under whatever lease is valid when its answer arrives, not the one it was sent under.
    ClaimUnderAnyLease,
    /// Release without a valid lease of this instance (a second process with a live node's id may).
    ReleaseWithoutLease,
    /// Keep authority by the monotonic clock alone, ignoring the wall clock's advance (a machine sleep).
    NoWallDeadline,
    /// Judge a node whose lease record is missing dead at once.
    MissingLeaseIsDead,
    /// Remember a sighting of a missing lease under the owner record's ETag alone, not its cell: a sighting
    /// on one cell counts for another whose record has the same bytes (celld's, which carry no nonce).
    MissingKeyedByEtagAlone,
    /// Let lease writes (renewals, acquisitions) of one instance run in parallel, and fence when a
    /// readback shows another of them (not this write's nonce) as "replaced by another writer".
    ParallelLeaseWrites,
    /// Let concurrent claims of one cell run separately and record whichever answer arrives last.
    ClaimsOutOfOrder,
    /// Decode a readback once and report a body that does not decode as `corrupt-record`.
    DecodeReadbackOnce,
    /// Keep `lease_valid()` (and the claims) after `close()`, which still retires the lease.
    KeepAuthorityAfterClose,
    /// Retire the lease at close over whatever record is there now (read it, write over its token),
    /// not only over this instance's own token: overwrites a lease another process of the node id holds.
    RetireUnconditionally,
    /// Treat every record naming this node id as this instance's own, without checking that its lease is
    /// still this instance's (another process of the id may have written it).
    TrustOwnNodeId,
    /// Check `close()` only when an operation starts, not when each of its writes is sent: a user callback
    /// that closes the instance mid-operation (an `AbortSignal` listener, an event handler) lets the
    /// operation's write out after close.
    SendAfterClose,
    /// Adopt any read-back lease record of ours after a rejected renewal, even an older one another writer
    /// restored (whose earlier `expires_ms` lets peers judge this node dead before its authority ends).
    AdoptRestoredLease,
    /// Take a first attempt's 412/404 as a clean rejection, never looking for this write's own nonce (a
    /// request delivered twice applies once and is answered 412 the second time).
    TrustFirstRejection,
    /// The renewal loop awaits a due credentials refresh (for as long as any request would, the request
    /// timeout) before it sleeps until the next renewal, instead of running it beside: a slow provider
    /// delays the renewal.
    RenewalWaitsOnCredentials,
    /// Judge a peer's lease by this machine's wall clock (dead once `expires_ms` is past it), not the store's.
    JudgeByWallClock,
    /// Count how long a lease version was seen unchanged from when the read that first showed it was sent,
    /// not from when its answer arrived (the holder may have written it after the send).
    CountFromSend,
    /// Take an answer's `Date` for the store's current second, never an older one a store cached: the upper
    /// bound of the store's clock, and with it a holder's `expires_ms`, comes up to a second early.
    TrustFreshDate,
    /// Read the overrun counter a lease's authority is voided by when its write is answered, not at its
    /// anchor before the send (issue 34 A): a sleep with the write queued and the wall clock stepped
    /// meanwhile is then missed, and the holder acts on a lease peers may already take over.
    CounterAfterAnswer,
    /// Take a conditional DELETE's 412/404 as "changed" without reading back (issue 34 C): a DELETE delivered
    /// twice applies once and is answered 412 or 404 the second time, and the lease it removed is reported kept.
    DeleteRejectionAtFaceValue,
    /// `close()` deletes the lease without settling the owner-record writes naming this node that other
    /// callers have in flight or dropped (issue 34 B): one lands after the delete, naming a node with no lease.
    DeleteBeforeWritesSettle,
    /// The offset watch ignores how long a reading took (its width), though the reading is still taken
    /// again while wide (issue 34): a starved thread, preempted in every retry, reads its wall clock late
    /// enough to look like a move of the wall clock's lead, and fences a healthy lease.
    IgnoreReadWidth,
}

impl Tooth {
    pub const ALL: [Tooth; 31] = [
        Tooth::RetryCasOnAmbiguity,
        Tooth::ConflictMeansOwned,
        Tooth::NoPeerSkewMargin,
        Tooth::AnchorAfterWrite,
        Tooth::InstallLateRenewal,
        Tooth::SkipReadback,
        Tooth::AnswerFromKnown,
        Tooth::IgnoreNodeLog,
        Tooth::SkipFleetMarker,
        Tooth::ClaimUnderAnyLease,
        Tooth::ReleaseWithoutLease,
        Tooth::NoWallDeadline,
        Tooth::MissingLeaseIsDead,
        Tooth::MissingKeyedByEtagAlone,
        Tooth::ParallelLeaseWrites,
        Tooth::ClaimsOutOfOrder,
        Tooth::DecodeReadbackOnce,
        Tooth::KeepAuthorityAfterClose,
        Tooth::RetireUnconditionally,
        Tooth::TrustOwnNodeId,
        Tooth::SendAfterClose,
        Tooth::AdoptRestoredLease,
        Tooth::TrustFirstRejection,
        Tooth::RenewalWaitsOnCredentials,
        Tooth::JudgeByWallClock,
        Tooth::CountFromSend,
        Tooth::TrustFreshDate,
        Tooth::CounterAfterAnswer,
        Tooth::DeleteRejectionAtFaceValue,
        Tooth::DeleteBeforeWritesSettle,
        Tooth::IgnoreReadWidth,
    ];
}
