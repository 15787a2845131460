//! The claim decision (SPEC §4 `claim`), pure: given the owner record just read and, when another node
//! holds it, that node's lease, say what to write — or whom to route to. Also which versions seen earlier
//! (not read now) a claim may write over without reading first: only those it would never need a lease for.
//! A missing lease is not proof of death by itself (SPEC §5): only once it has stayed missing long enough.

use crate::error::{Error, Failure, Result};
use crate::ownership::lease::{missing_dead, peer_dead};
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

/// The holder's lease as a claim found it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PeerLease<'a> {
    Present(&'a NodeLeaseRecord),
    /// No lease record; this instance has seen it missing (for the same owner record) for this long, on
    /// its own monotonic clock (0 on the first sight).
    Missing { for_ms: f64 },
}

/// The rules of time a takeover is judged by (SPEC §5).
#[derive(Debug, Clone, Copy)]
pub struct PeerRule {
    pub lease_ttl_ms: u64,
    pub max_skew_ms: u64,
    /// Wall clock sampled before the owner record was read.
    pub wall_now_ms: u64,
}

/// The decision once the holder's lease is known: dead (`expires_ms + skew <= now`, or missing for
/// `ttl + skew`) → take over at epoch + 1; otherwise `None` (the holder is live: route to it; or dead but
/// `awaiting_recovery`).
pub fn after_peer_lease(current: &OwnerRecord, lease: PeerLease<'_>, rule: PeerRule) -> Result<Option<Write>> {
    let gated = matches!(lease, PeerLease::Present(l) if awaiting_recovery(Some(l), rule.max_skew_ms, rule.wall_now_ms));
    if !holder_dead(lease, rule) || gated {
        return Ok(None);
    }
    Ok(Some(Write { guard: CasGuard::Match(current.etag.clone()), epoch: next_epoch(current)?, took_over: true }))
}

/// The node-log gate (SPEC §2): the holder's lease is dead but carries a celld node log that is not
/// sealed, so the cell waits for celld to recover that log before anyone takes it over.
pub fn awaiting_recovery(lease: Option<&NodeLeaseRecord>, max_skew_ms: u64, wall_now_ms: u64) -> bool {
    lease.is_some_and(|l| peer_dead(l.expires_ms, max_skew_ms, wall_now_ms) && awaits_recovery(l))
}

/// Whether the holder of a lease found so may be judged dead.
pub fn holder_dead(lease: PeerLease<'_>, rule: PeerRule) -> bool {
    match lease {
        PeerLease::Present(l) => peer_dead(l.expires_ms, rule.max_skew_ms, rule.wall_now_ms),
        PeerLease::Missing { for_ms } => missing_dead(for_ms, rule.lease_ttl_ms, rule.max_skew_ms),
    }
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
        NodeLeaseRecord { node: "b".into(), expires_ms, addr: String::new(), etag: "l".into(), nonce: None, log: None }
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

    fn rule(wall_now_ms: u64) -> PeerRule {
        PeerRule { lease_ttl_ms: 3_000, max_skew_ms: 1_000, wall_now_ms }
    }

    #[test]
    fn takeover_only_when_the_peer_lease_is_dead() {
        let held = rec("b", 2);
        let expires = 100_000;
        let l = lease(expires);
        assert_eq!(after_peer_lease(&held, PeerLease::Present(&l), rule(100_999)).unwrap(), None);
        assert_eq!(
            after_peer_lease(&held, PeerLease::Present(&l), rule(101_000)).unwrap(),
            Some(Write { guard: CasGuard::Match(held.etag.clone()), epoch: 3, took_over: true })
        );
    }

    #[test]
    fn a_missing_lease_is_dead_only_once_it_stayed_missing_for_ttl_plus_skew() {
        let held = rec("b", 2);
        for for_ms in [0.0, 3_999.0] {
            assert_eq!(after_peer_lease(&held, PeerLease::Missing { for_ms }, rule(u64::MAX)).unwrap(), None);
        }
        assert!(after_peer_lease(&held, PeerLease::Missing { for_ms: 4_000.0 }, rule(0)).unwrap().is_some());
    }

    #[test]
    fn a_dead_holder_with_an_unsealed_log_awaits_recovery() {
        use crate::ownership::records::NodeLog;
        let held = rec("b", 2);
        let (skew, expires, dead_at) = (1_000, 100_000, 101_000);
        let at = |wall_now_ms| PeerRule { lease_ttl_ms: 3_000, max_skew_ms: skew, wall_now_ms };
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
            ..lease(expires)
        };
        for state in ["open", "recovering", "anything-else"] {
            let l = with_log(state);
            assert_eq!(after_peer_lease(&held, PeerLease::Present(&l), at(dead_at)).unwrap(), None, "{state}");
            assert!(awaiting_recovery(Some(&l), skew, dead_at), "{state}");
            // Live, it is simply the owner: routed to, not awaiting anything.
            assert!(!awaiting_recovery(Some(&l), skew, dead_at - 1), "{state}");
        }
        let sealed = with_log("sealed");
        assert!(!awaiting_recovery(Some(&sealed), skew, dead_at));
        assert!(matches!(
            after_peer_lease(&held, PeerLease::Present(&sealed), at(dead_at)).unwrap(),
            Some(Write { epoch: 3, .. })
        ));
        assert!(!awaiting_recovery(None, skew, dead_at));
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
        let missing = PeerLease::Missing { for_ms: f64::MAX };
        assert_eq!(after_peer_lease(&rec("b", MAX_EPOCH), missing, rule(0)).unwrap_err().code(), "corrupt-record");
    }
}
