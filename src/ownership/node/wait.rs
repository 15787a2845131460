//! Waiting for a cell (SPEC §4.2): `claim_waiting` claims, and after a rejection sleeps until the moment
//! the claim can next succeed (`Wake`), sending nothing meanwhile. It must never hold a claim attempt of
//! its own beside the shared one, and it ends at once on `close()` or its caller's signal.

use core::future::Future;

use crate::env::Env;
use crate::error::{Error, Quoted, Result};
use crate::ownership::ids::check_cell;
use crate::ownership::join::{first, Either};

use super::claim::Wake;
use super::{closed_error, ClaimOptions, ClaimOutcome, S3Ownership};

/// The longest single timer a waiting claim sets (setTimeout's limit).
const MAX_SLEEP_MS: u32 = i32::MAX as u32;

impl<E: Env> S3Ownership<E> {
    /// `claim_with`, waiting until the cell can be claimed: after a rejection it sleeps until the moment
    /// the peer rule can judge the holder's lease, as read, dead (the earlier of: the version seen unchanged
    /// for the holder's ttl plus the rate margin, and the store's clock past its expiry; a missing lease once
    /// it has stayed missing `ttl + skew`; a log awaiting celld's recovery 5 s later, celld's recovery
    /// heartbeat, or a ttl if shorter), then claims again — a renewed holder means another sleep until its
    /// new version can be judged. No request
    /// is sent while it sleeps. Resolves applied, or fails: `aborted` when `cancel` finishes first (checked
    /// while sleeping and before each attempt; an attempt already sent is answered first), `not-leased`
    /// when `close()` is called, or the error of an attempt (this node's lease must stay valid meanwhile).
    pub async fn claim_waiting(
        &self,
        cell: &str,
        options: ClaimOptions,
        cancel: impl Future<Output = ()>,
    ) -> Result<ClaimOutcome> {
        check_cell(self.config.ids, cell)?;
        let mut cancel = core::pin::pin!(cancel);
        loop {
            let cancelled =
                core::future::poll_fn(|cx| core::task::Poll::Ready(cancel.as_mut().poll(cx).is_ready())).await;
            if cancelled {
                return Err(aborted_error(cell));
            }
            let (outcome, wake) = self.claim_shared(cell, options).await?;
            if let ClaimOutcome::Applied { .. } = outcome {
                return Ok(outcome);
            }
            self.sleep_until(wake, cancel.as_mut(), cell).await?;
        }
    }

    /// Sleeps until `wake` (a monotonic instant); a timer that fires early is followed by one for the rest. Cut short by `close()` (`not-leased`) or `cancel` (`aborted`).
    async fn sleep_until(
        &self,
        wake: Wake,
        mut cancel: core::pin::Pin<&mut impl Future<Output = ()>>,
        cell: &str,
    ) -> Result<()> {
        loop {
            if self.is_closed() {
                return Err(closed_error());
            }
            let left = (wake.0 - self.store.env.mono_ms()).max(0.0).ceil();
            if left <= 0.0 {
                return Ok(());
            }
            // setTimeout fires at once when asked for more than 2^31 - 1 ms.
            let ms = left.min(MAX_SLEEP_MS as f64) as u32;
            match first(first(self.store.env.sleep(ms), self.closed_signal.wait()), cancel.as_mut()).await {
                Either::Left(Either::Left(())) => {}
                Either::Left(Either::Right(_)) => return Err(closed_error()),
                Either::Right(()) => return Err(aborted_error(cell)),
            }
        }
    }
}

fn aborted_error(cell: &str) -> Error {
    Error::aborted(format!("the wait to claim {} was aborted by its signal", Quoted(cell)))
}
