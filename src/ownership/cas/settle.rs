//! Settling a conditional write: an ambiguous answer (or a first rejection) is read back, and this
//! write's nonce in the record says whether it landed. At most `MAX_RECONCILES` readbacks per operation.

use core::cell::{Cell, RefCell};

use super::{Budget, Store};
use crate::env::{Env, Event};
use crate::error::{Error, Fault, Result};
use crate::ownership::records::{decode_nonce, CasGuard, CasOutcome};
use crate::s3::PutAnswer;

/// Readbacks allowed to settle one operation's ambiguous writes (SPEC §3: per operation).
pub const MAX_RECONCILES: usize = 3;

/// One operation's readback allowance, shared by every write it makes.
#[derive(Debug, Default)]
pub struct Reconciles(Cell<usize>);

impl Reconciles {
    /// Takes one readback; false when the operation has used them all.
    fn take(&self) -> bool {
        let used = self.0.get();
        self.0.set(used + 1);
        used < MAX_RECONCILES
    }

    pub fn used(&self) -> usize {
        self.0.get().min(MAX_RECONCILES)
    }
}

/// A conditional write once settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Applied { etag: String },
    /// Known not to have landed.
    Rejected,
    /// An ambiguous attempt may have landed, but the record has since moved on to another writer's
    /// version: not ours now, yet not a clean rejection either.
    Superseded,
}

impl Settled {
    /// For callers that must not report a possibly-landed write as rejected: `Superseded` is `ambiguous`.
    pub fn outcome(self, key: &str) -> Result<CasOutcome> {
        match self {
            Settled::Applied { .. } => Ok(CasOutcome::Applied),
            Settled::Rejected => Ok(CasOutcome::Rejected),
            Settled::Superseded => Err(Error::ambiguous(
                key.to_owned(),
                "an ambiguous attempt may have landed before another writer replaced it",
            )),
        }
    }
}

/// How `cas_settled` takes a rejection (412/404) of its first attempt.
pub enum FirstRejection<'a> {
    /// Read the record back once and look for this write's nonce.
    ReadBack,
    /// The caller reads the record next anyway: the rejection is returned as it is, and this write's
    /// nonces are pushed here for the caller to recognise.
    CallerReads(&'a RefCell<Vec<String>>),
}

impl<E: Env> Store<E> {
    /// Reports how a write that needed readbacks was settled.
    fn settled(&self, key: &str, settled: Settled, readbacks: usize) -> Settled {
        let outcome = match settled {
            Settled::Applied { .. } => "applied",
            Settled::Rejected => "rejected",
            Settled::Superseded => "superseded",
        };
        self.observer.observe(Event::AmbiguousSettled { key, outcome, readbacks });
        settled
    }

    /// A conditional write settled to applied / rejected. `body(nonce)` renders the record with a fresh
    /// nonce per attempt. A first attempt answered 412/404 is read back once (`FirstRejection::ReadBack`):
    /// a request the network delivered twice applies once and is answered 412 the second time, and only
    /// this write's nonce in the record tells the two apart. A caller that reads the record next anyway
    /// recognises the nonce there instead (`FirstRejection::CallerReads`, with `nonces` collecting this
    /// write's nonces). An ambiguous answer is settled by reading back: our nonce there → applied;
    /// the guard still holding → ours did not land, send again (a fresh nonce; at most one can land);
    /// anything else → rejected, or `Superseded` when an earlier attempt was ambiguous (the guard moved on,
    /// so ours can never land now, but it may have landed before). A readback that does not decode is read
    /// again. Unsettled within the operation's `reconciles` → `ambiguous`.
    pub async fn cas_settled(
        &self,
        key: &str,
        guard: &CasGuard,
        body: &dyn Fn(&str) -> Vec<u8>,
        budget: Budget,
        reconciles: &Reconciles,
    ) -> Result<Settled> {
        self.cas_settled_then(key, guard, body, budget, reconciles, FirstRejection::ReadBack).await
    }

    /// `cas_settled`, taking a first attempt's rejection as `first` says.
    pub async fn cas_settled_then(
        &self,
        key: &str,
        guard: &CasGuard,
        body: &dyn Fn(&str) -> Vec<u8>,
        budget: Budget,
        reconciles: &Reconciles,
        first: FirstRejection<'_>,
    ) -> Result<Settled> {
        let mut nonces: Vec<String> = Vec::new();
        let mut ambiguity: Option<Fault> = None;
        // Why the last attempt did not land, when the store said so without deciding (409, 429).
        let mut turned_away = String::new();
        // Throttles so far, since the first send: what bounds them is time, not the readbacks.
        let (started, mut turned) = (self.env.mono_ms(), 0u32);
        loop {
            let mut after_throttle = false;
            let nonce = self.nonce();
            let answer = self.put_cas(key, guard, body(&nonce), budget).await;
            if let FirstRejection::CallerReads(sent) = &first {
                sent.borrow_mut().push(nonce.clone());
            }
            nonces.push(nonce);
            match answer {
                PutAnswer::Applied { etag } => return Ok(Settled::Applied { etag }),
                PutAnswer::Rejected if nonces.len() == 1 && !self.rules.look_for_own_nonce => {
                    return Ok(Settled::Rejected)
                }
                // A first attempt's rejection is read back once (our nonce there: delivered twice); a
                // later one may be our own earlier write, and is always read back.
                PutAnswer::Rejected if nonces.len() == 1 => match &first {
                    FirstRejection::CallerReads(_) => return Ok(Settled::Rejected),
                    FirstRejection::ReadBack if reconciles.used() >= MAX_RECONCILES => return Ok(Settled::Rejected),
                    FirstRejection::ReadBack => {}
                },
                PutAnswer::Rejected if !self.rules.never_resend_cas => return Ok(Settled::Rejected),
                PutAnswer::Rejected => {}
                PutAnswer::Conflict { .. } if !self.rules.reread_after_conflict => return Ok(Settled::Rejected),
                // Not applied: the readback decides whether the guard still holds.
                PutAnswer::Conflict { code } => turned_away = format!("409 {code}"),
                // Not applied either (never someone else's win): pause, then the readback decides.
                PutAnswer::Throttled(fault) => {
                    turned += 1;
                    // Only a 429 is known not to have landed (R2 turns the write away before serving it).
                    // A 503 SlowDown is settled like an ambiguous answer (a store or a proxy may answer it
                    // after applying), at once the first time, and paced like a 429 when it repeats: one
                    // SlowDown is a blip, several are throttling (docs/load.md).
                    let sure = fault.status == 429;
                    if sure || turned > 1 {
                        let Some(pause) = self.throttle_pause(budget, started, turned) else {
                            return Err(out_of_time(key, fault, turned, self.env.mono_ms() - started, ambiguity));
                        };
                        self.env.sleep(pause).await;
                    }
                    if sure {
                        after_throttle = true;
                    } else {
                        ambiguity = Some(fault.clone());
                    }
                    turned_away = fault.detail;
                }
                PutAnswer::Ambiguous(_) if !self.rules.settle_by_readback => {
                    return Ok(Settled::Applied { etag: "\"unknown\"".to_owned() })
                }
                PutAnswer::Ambiguous(fault) if !self.rules.never_resend_cas && nonces.len() <= MAX_RECONCILES => {
                    ambiguity = Some(fault);
                    continue;
                }
                PutAnswer::Ambiguous(fault) => ambiguity = Some(fault),
                PutAnswer::Refused(e) if ambiguity.is_some() => {
                    let detail = format!("an earlier attempt was ambiguous, then the store refused: {e}");
                    return Err(Error::ambiguous(key.to_owned(), Fault { detail, ..e.fault() }));
                }
                PutAnswer::Refused(e) => return Err(e),
            }
            // The guard no longer holds: ours can never land now, but an ambiguous attempt may have
            // landed before the record moved on.
            let moved_on = if ambiguity.is_some() { Settled::Superseded } else { Settled::Rejected };
            let mut undecodable = false;
            loop {
                // The readback after a throttle settles no ambiguity: the deadline bounds it, not the
                // operation's readbacks.
                if !core::mem::take(&mut after_throttle) && !reconciles.take() {
                    return Err(unsettled(key, ambiguity, undecodable, &turned_away));
                }
                let current = self.read_back(key, budget, ambiguity.is_some()).await?;
                let (body, etag) = match (current, guard) {
                    (Some(found), _) => found,
                    // Still absent: ours did not land; send again.
                    (None, CasGuard::Absent) => break,
                    (None, CasGuard::Match(_)) => return Ok(self.settled(key, moved_on, nonces.len())),
                };
                let found = if self.rules.reread_undecodable { decode_nonce(key, &body) } else { Ok(decode_nonce(key, &body)?) };
                match found {
                    // A truncated transfer, or a record another writer left undecodable: neither says
                    // whether ours landed. Read again.
                    Err(_) => undecodable = true,
                    Ok(Some(n)) if nonces.contains(&n) => {
                        return Ok(self.settled(key, Settled::Applied { etag }, nonces.len()));
                    }
                    Ok(_) if !matches!(guard, CasGuard::Match(t) if *t == etag) => {
                        return Ok(self.settled(key, moved_on, nonces.len()));
                    }
                    // The guard still holds: ours did not land; send again.
                    Ok(_) => break,
                }
            }
        }
    }
}

impl<E: Env> Store<E> {
    /// Reads `key` back to settle a write or a delete. A readback that fails after an attempt that may have
    /// landed is `ambiguous` (the write's fate is still unknown), not the read's own error.
    async fn read_back(&self, key: &str, budget: Budget, ambiguous: bool) -> Result<Option<(Vec<u8>, String)>> {
        match self.get(key, budget).await {
            Err(e) if ambiguous => {
                let detail = format!("readback failed: {e}");
                Err(Error::ambiguous(key.to_owned(), Fault { detail, ..e.fault() }))
            }
            found => found,
        }
    }
}

/// A conditional DELETE (`If-Match` one version) once settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// The version is gone: this delete removed it (a 2xx; or a 412/404 whose readback finds the key absent,
    /// a delete delivered twice whose first delivery applied), or another remover did.
    Gone,
    /// Another version is there now: not deleted.
    Changed,
}

impl<E: Env> Store<E> {
    /// Deletes the version `etag` of `key`, settled like a write (SPEC §3, issue 34 C): a 412/404 is read back,
    /// since a DELETE the network delivered twice applies once and is answered 412 or 404 the second time; an
    /// ambiguous, conflicting or throttled answer is read back too. The key absent → `Gone`; the same version
    /// still there → it did not land, sent again; another version → `Changed`. At most `reconciles` readbacks.
    pub async fn delete_settled(&self, key: &str, etag: &str, budget: Budget, reconciles: &Reconciles) -> Result<Removal> {
        let guard = CasGuard::Match(etag.to_owned());
        let mut ambiguity: Option<Fault> = None;
        let mut turned_away = String::new();
        let (started, mut turned) = (self.env.mono_ms(), 0u32);
        loop {
            let mut after_throttle = false;
            let (status, answer) = self.delete(key, Some(&guard), budget).await;
            match answer {
                _ if (200..300).contains(&status) => return Ok(Removal::Gone),
                PutAnswer::Applied { .. } => return Ok(Removal::Gone),
                PutAnswer::Rejected if !self.rules.settle_deletes => return Ok(Removal::Changed),
                PutAnswer::Rejected => {}
                PutAnswer::Refused(e) if ambiguity.is_some() => {
                    let detail = format!("an earlier attempt was ambiguous, then the store refused: {e}");
                    return Err(Error::ambiguous(key.to_owned(), Fault { detail, ..e.fault() }));
                }
                PutAnswer::Refused(e) => return Err(e),
                PutAnswer::Conflict { code } => turned_away = format!("409 {code}"),
                // Paced as a write is (docs/load.md); only a 429 is known not to have landed, and its
                // readback is not one of the operation's.
                PutAnswer::Throttled(fault) => {
                    turned += 1;
                    let Some(pause) = self.throttle_pause(budget, started, turned) else {
                        return Err(out_of_time(key, fault, turned, self.env.mono_ms() - started, ambiguity));
                    };
                    self.env.sleep(pause).await;
                    if fault.status == 429 {
                        after_throttle = true;
                    } else {
                        ambiguity = Some(fault.clone());
                    }
                    turned_away = fault.detail;
                }
                PutAnswer::Ambiguous(fault) => ambiguity = Some(fault),
            }
            if !after_throttle && !reconciles.take() {
                return Err(unsettled(key, ambiguity, false, &turned_away));
            }
            let current = self.read_back(key, budget, ambiguity.is_some()).await?;
            match current {
                None => return Ok(Removal::Gone),
                // Still the version it names: the delete did not land; send it again.
                Some((_, current)) if current == etag => {}
                Some(_) => return Ok(Removal::Changed),
            }
        }
    }
}

/// A write the store kept turning away until the caller's deadline: `throttled` naming the store's last
/// answer, unless an earlier attempt was ambiguous (it may have landed).
fn out_of_time(key: &str, last: Fault, turned: u32, ms: f64, ambiguity: Option<Fault>) -> Error {
    let turned = format!("turned away {turned} times in {ms:.0} ms ({})", last.detail);
    match ambiguity {
        Some(first) => {
            let detail = format!("an earlier attempt was ambiguous ({}), then the store {turned}", first.detail);
            Error::ambiguous(key.to_owned(), Fault { detail, ..first })
        }
        None => {
            let detail = format!("{turned}, backing off with full jitter until the caller's deadline; not applied");
            Error::throttled(key.to_owned(), Fault { detail, ..last })
        }
    }
}

/// Why a write could not be settled within the operation's readbacks.
/// `turned_away`: the last not-applied answer that decided nothing (409, or a 429 before it).
fn unsettled(key: &str, ambiguity: Option<Fault>, undecodable: bool, turned_away: &str) -> Error {
    let key = key.to_owned();
    let readbacks = if undecodable { " readbacks (the last did not decode)" } else { " readbacks" };
    match ambiguity {
        Some(last) => {
            let detail = format!("still unsettled after {MAX_RECONCILES}{readbacks}; last: {}", last.detail);
            Error::ambiguous(key, Fault { detail, ..last })
        }
        None if undecodable => {
            Error::transport(key, format!("not applied ({turned_away}), and unsettled after {MAX_RECONCILES}{readbacks}"))
        }
        None => Error::transport(key, format!("not applied: store kept answering {turned_away} through {MAX_RECONCILES} readbacks")),
    }
}
