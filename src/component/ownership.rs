//! The `ownership` interface: a `node` resource over `S3Ownership<WasiEnv>`. Each method runs the core's
//! method of the same name to completion on wstd's reactor (a component's exports are synchronous calls)
//! and converts what it returns. The renewal loop of long-lived JS runtimes has no place here (nothing
//! runs between calls): the core renews a due lease inside the calls a caller makes anyway (SPEC 4.4).

use wstd::runtime::block_on;

use super::bindings::exports::celld::edge::ownership::{
    Applied, CasOutcome, ClaimOutcome, ClaimedCell, Closed, Config, Error, Guard, Guest, GuestNode, IdSet, LeaseRecord,
    LeaseWrite, Node as NodeHandle, OwnerInfo, OwnerRecord, PriorOwner, ProbePolicy,
};
use super::bindings::Component;
use super::error::to_wit;
use super::WasiEnv;
use crate::error::Error as CoreError;
use crate::ownership::{self as core, CasGuard, CloseOptions, S3Ownership};

impl Guest for Component {
    type Node = Node;
}

pub(super) struct Node {
    own: S3Ownership<WasiEnv>,
}

/// The world's config as the core's: what is left out keeps the JS API's default.
fn config(c: Config) -> core::Config {
    let mut out = core::Config::new(&c.endpoint, &c.bucket, c.node.as_deref().unwrap_or(""), &c.access_key_id, &c.secret_access_key);
    out.made_up_node = c.node.is_none();
    out.session_token = c.session_token;
    out.region = c.region.unwrap_or(out.region);
    out.addr = c.addr.unwrap_or_default();
    out.prefix = c.prefix.unwrap_or_default();
    out.lease_ttl_ms = c.lease_ttl_ms.unwrap_or(out.lease_ttl_ms);
    out.max_clock_skew_ms = c.max_clock_skew_ms.unwrap_or(out.max_clock_skew_ms);
    out.path_style = c.path_style.unwrap_or(out.path_style);
    out.request_timeout_ms = c.request_timeout_ms.unwrap_or(out.request_timeout_ms);
    out.probe = match c.probe {
        None => out.probe,
        Some(ProbePolicy::Recorded) => core::ProbePolicy::Recorded,
        Some(ProbePolicy::Always) => core::ProbePolicy::Always,
        Some(ProbePolicy::Off) => core::ProbePolicy::Off,
    };
    out.ids = match c.ids {
        None | Some(IdSet::Celld) => core::IdSet::Celld,
        Some(IdSet::Utf8) => core::IdSet::Utf8,
    };
    out.celld = c.celld.unwrap_or(out.celld);
    out
}

fn owner_info(o: core::OwnerInfo) -> OwnerInfo {
    OwnerInfo {
        node: Some(o.node).filter(|n| !n.is_empty()),
        epoch: o.epoch,
        addr: o.addr,
        live: o.live,
        awaiting_recovery: o.awaiting_recovery,
        held: o.held,
    }
}

fn cas(o: core::CasOutcome) -> CasOutcome {
    match o {
        core::CasOutcome::Applied => CasOutcome::Applied,
        core::CasOutcome::Rejected => CasOutcome::Rejected,
    }
}

fn guard(g: Guard) -> Result<CasGuard, Error> {
    match g {
        Guard::Absent => Ok(CasGuard::Absent),
        Guard::Match(etag) if !etag.is_empty() => Ok(CasGuard::Match(etag)),
        Guard::Match(_) => Err(to_wit(CoreError::invalid("guard must be absent or match a non-empty etag"))),
    }
}

/// The epochs a JS node can read too (a JS number holds them exactly), as the JS API checks them.
fn epoch(e: u64) -> Result<u64, Error> {
    match e {
        1..=MAX_SAFE => Ok(e),
        _ => Err(to_wit(CoreError::invalid(format!("epoch must be an integer in 1..=2^53-1, got {e}")))),
    }
}

const MAX_SAFE: u64 = (1 << 53) - 1;

impl GuestNode for Node {
    fn open(c: Config) -> Result<NodeHandle, Error> {
        let own = S3Ownership::new(config(c), WasiEnv).map_err(to_wit)?;
        Ok(NodeHandle::new(Node { own }))
    }

    fn id(&self) -> String {
        self.own.config().node.clone()
    }

    fn acquire_lease(&self) -> Result<(), Error> {
        block_on(self.own.acquire_lease()).map_err(to_wit)
    }

    fn renew(&self) -> Result<(), Error> {
        block_on(self.own.renew_lease()).map_err(to_wit)
    }

    fn lease_valid(&self) -> bool {
        self.own.lease_valid()
    }

    fn claim(&self, cell: String) -> Result<ClaimOutcome, Error> {
        Ok(match block_on(self.own.claim(&cell)).map_err(to_wit)? {
            core::ClaimOutcome::Applied { epoch, took_over, prior } => ClaimOutcome::Applied(Applied {
                epoch,
                took_over,
                prior: prior.map(|p| PriorOwner { node: Some(p.node).filter(|n| !n.is_empty()), epoch: p.epoch }),
            }),
            core::ClaimOutcome::Rejected { owner } => ClaimOutcome::Rejected(owner_info(owner)),
        })
    }

    fn release(&self, cell: String) -> Result<CasOutcome, Error> {
        block_on(self.own.release(&cell)).map(cas).map_err(to_wit)
    }

    fn owner(&self, cell: String) -> Result<Option<OwnerInfo>, Error> {
        block_on(self.own.owner(&cell)).map(|o| o.map(owner_info)).map_err(to_wit)
    }

    fn verify(&self, cell: String, epoch: u64) -> Result<bool, Error> {
        block_on(self.own.verify(&cell, epoch)).map_err(to_wit)
    }

    fn read_owner(&self, cell: String) -> Result<Option<OwnerRecord>, Error> {
        let read = block_on(self.own.read_owner_and_judge(&cell)).map_err(to_wit)?;
        Ok(read.map(|r| OwnerRecord { node: Some(r.node).filter(|n| !n.is_empty()), epoch: r.epoch, etag: r.etag }))
    }

    fn cas_owner(&self, cell: String, g: Guard, e: u64) -> Result<CasOutcome, Error> {
        let (g, e) = (guard(g)?, epoch(e)?);
        block_on(self.own.cas_owner(&cell, &g, e)).map(cas).map_err(to_wit)
    }

    fn release_owner(&self, cell: String, e: u64) -> Result<CasOutcome, Error> {
        let e = epoch(e)?;
        block_on(self.own.release_owner(&cell, e)).map(cas).map_err(to_wit)
    }

    fn read_node_lease(&self, node: String) -> Result<Option<LeaseRecord>, Error> {
        let read = block_on(self.own.read_node_lease(&node)).map_err(to_wit)?;
        Ok(read.map(|r| LeaseRecord { node: r.node, expires_ms: r.expires_ms, addr: r.addr, etag: r.etag }))
    }

    fn cas_node_lease(&self, g: Guard, expires_ms: u64) -> Result<LeaseWrite, Error> {
        let g = guard(g)?;
        Ok(match block_on(self.own.cas_node_lease(&g, expires_ms)).map_err(to_wit)? {
            (core::CasOutcome::Applied, etag) => LeaseWrite::Applied(etag),
            (core::CasOutcome::Rejected, _) => LeaseWrite::Rejected,
        })
    }

    fn claimed(&self) -> Vec<ClaimedCell> {
        self.own.claimed().into_iter().map(|(cell, epoch)| ClaimedCell { cell, epoch }).collect()
    }

    fn close(&self, release: bool) -> Result<Closed, Error> {
        // Authority ends before anything is sent, as the JS `close()` does.
        self.own.shut();
        let closed = block_on(self.own.close(CloseOptions { release })).map_err(to_wit)?;
        Ok(Closed { retired: closed.retired, deleted: closed.deleted, released: u32::try_from(closed.released).unwrap_or(u32::MAX) })
    }
}
