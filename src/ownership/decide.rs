//! The claim decision (SPEC §4 `claim`), pure: given the owner record just read and, when another node
//! holds it, that node's lease, say what to write — or whom to route to. Also which versions seen earlier
//! (not read now) a claim may write over without reading first: only those it would never need a lease for.
//! Whether the holder is dead is the peer rule's verdict (`clock::judge`, SPEC §5), given here.

use crate::error::{Error, Failure, Result};
use crate::ownership::records::{awaits_recovery, CasGuard, NodeLeaseRecord, OwnerRecord, MAX_EPOCH};

/// A claim's write: `{node: me, epoch}` under `guard`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub guard: CasGuard,
    pub epoch: u64,
    pub took_over: bool,
}

/// What a claim should do after reading the owner record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<'a> {
    Write(Write),
    /// Another node holds it (the record read, `holder`): read that node's lease, then call
    /// [`after_peer_lease`].
    ReadPeerLease { holder: &'a OwnerRecord },
}

/// The decision on the record alone: absent → epoch 1; released or ours → epoch + 1.
pub fn claim_step<'a>(me: &str, current: Option<&'a OwnerRecord>) -> Result<Step<'a>> {
    let Some(rec) = current else {
        return Ok(Step::Write(Write { guard: CasGuard::Absent, epoch: 1, took_over: false }));
    };
    if rec.is_released() || rec.node == me {
        return Ok(Step::Write(Write { guard: CasGuard::Match(rec.etag.clone()), epoch: next_epoch(rec)?, took_over: false }));
    }
    Ok(Step::ReadPeerLease { holder: rec })
}

/// Whether a claim may write over a version seen earlier instead of one read now (the guard makes the store
/// check that it is still current): only when `claim_step` would write over it without a lease, i.e. not
/// when it names another node (a holder's lease is judged only after a fresh read), and not when the epoch
/// cannot advance (the fresh read will say why).
pub fn writes_over_known(me: &str, known: Option<&OwnerRecord>) -> bool {
    matches!(claim_step(me, known), Ok(Step::Write(_)))
}

/// The holder's lease as a claim found it (`None`: missing), and the peer rule's verdict on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Holder<'a> {
    pub lease: Option<&'a NodeLeaseRecord>,
    pub dead: bool,
}

/// The decision once the holder's lease is judged: dead → take over at epoch + 1; otherwise `None` (the
/// holder is live: route to it; or dead but `awaiting_recovery`).
pub fn after_peer_lease(current: &OwnerRecord, holder: Holder<'_>) -> Result<Option<Write>> {
    if !holder.dead || awaiting_recovery(holder) {
        return Ok(None);
    }
    Ok(Some(Write { guard: CasGuard::Match(current.etag.clone()), epoch: next_epoch(current)?, took_over: true }))
}

/// The node-log gate (SPEC §2): the holder's lease is dead but carries a celld node log that is not
/// sealed, so the cell waits for celld to recover that log before anyone takes it over.
pub fn awaiting_recovery(holder: Holder<'_>) -> bool {
    holder.dead && holder.lease.is_some_and(awaits_recovery)
}

fn next_epoch(rec: &OwnerRecord) -> Result<u64> {
    match rec.epoch.checked_add(1).filter(|e| *e <= MAX_EPOCH) {
        Some(e) => Ok(e),
        None => Err(Error::CorruptRecord(Box::new(Failure::new(
            format!("owner record at epoch {}", rec.epoch),
            "epoch cannot advance past 2^53 - 1",
        )))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(node: &str, epoch: u64) -> OwnerRecord {
        OwnerRecord { node: node.into(), epoch, etag: format!("\"{node}{epoch}\""), nonce: None }
    }

    fn lease(expires_ms: u64) -> NodeLeaseRecord {
        NodeLeaseRecord {
            node: "b".into(),
            expires_ms,
            addr: String::new(),
            etag: "l".into(),
            nonce: None,
            log: None,
            ttl_ms: None,
            store_clock: false,
        }
    }

    #[test]
    fn absent_released_and_own_records() {
        assert_eq!(claim_step("a", None).unwrap(), Step::Write(Write { guard: CasGuard::Absent, epoch: 1, took_over: false }));
        let released = rec("", 4);
        assert_eq!(
            claim_step("a", Some(&released)).unwrap(),
            Step::Write(Write { guard: CasGuard::Match(released.etag.clone()), epoch: 5, took_over: false })
        );
        let own = rec("a", 7);
        assert_eq!(
            claim_step("a", Some(&own)).unwrap(),
            Step::Write(Write { guard: CasGuard::Match(own.etag.clone()), epoch: 8, took_over: false })
        );
        let held = rec("b", 2);
        assert_eq!(claim_step("a", Some(&held)).unwrap(), Step::ReadPeerLease { holder: &held });
    }

    #[test]
    fn takeover_only_when_the_holder_is_judged_dead() {
        let held = rec("b", 2);
        let l = lease(100_000);
        for lease in [Some(&l), None] {
            assert_eq!(after_peer_lease(&held, Holder { lease, dead: false }).unwrap(), None);
            assert_eq!(
                after_peer_lease(&held, Holder { lease, dead: true }).unwrap(),
                Some(Write { guard: CasGuard::Match(held.etag.clone()), epoch: 3, took_over: true })
            );
        }
    }

    #[test]
    fn a_dead_holder_with_an_unsealed_log_awaits_recovery() {
        use crate::ownership::records::NodeLog;
        let held = rec("b", 2);
        let with_log = |state: &str| NodeLeaseRecord {
            log: Some(NodeLog {
                state: state.into(),
                epoch: 4,
                ensemble: vec!["x".into()],
                tiered: 9,
                active: false,
                claimant: None,
                claimed_ms: None,
            }),
            ..lease(100_000)
        };
        for state in ["open", "recovering", "anything-else"] {
            let l = with_log(state);
            let dead = Holder { lease: Some(&l), dead: true };
            assert_eq!(after_peer_lease(&held, dead).unwrap(), None, "{state}");
            assert!(awaiting_recovery(dead), "{state}");
            // Live, it is simply the owner: routed to, not awaiting anything.
            assert!(!awaiting_recovery(Holder { dead: false, ..dead }), "{state}");
        }
        let sealed = with_log("sealed");
        let dead = Holder { lease: Some(&sealed), dead: true };
        assert!(!awaiting_recovery(dead));
        assert!(matches!(after_peer_lease(&held, dead).unwrap(), Some(Write { epoch: 3, .. })));
        assert!(!awaiting_recovery(Holder { lease: None, dead: true }));
    }

    #[test]
    fn a_version_seen_earlier_is_written_over_only_when_no_lease_is_needed() {
        for known in [None, Some(rec("", 4)), Some(rec("a", 7))] {
            assert!(writes_over_known("a", known.as_ref()));
        }
        assert!(!writes_over_known("a", Some(&rec("b", 2))), "a peer's record: read it and its lease now");
        assert!(!writes_over_known("a", Some(&rec("a", MAX_EPOCH))));
    }

    #[test]
    fn epochs_never_pass_the_js_safe_range() {
        assert_eq!(claim_step("a", Some(&rec("a", MAX_EPOCH))).unwrap_err().code(), "corrupt-record");
        let missing = Holder { lease: None, dead: true };
        assert_eq!(after_peer_lease(&rec("b", MAX_EPOCH), missing).unwrap_err().code(), "corrupt-record");
    }
}
