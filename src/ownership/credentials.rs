//! Short-lived credentials (SPEC 4.2): when the keys of a credentials provider must be asked for again,
//! and the single refresh that concurrent callers share. The rule (`refresh_due`, `expired`) is pure;
//! `Rotation` keeps what the last answer said and runs the one refresh in flight over the `Env`, swapping
//! the keys in the bucket's signer. A refresh never touches the lease or the claims, and a lease renewal
//! never waits on the provider while the keys it holds still work (a slow provider must not lapse a lease).

use core::cell::{Cell, RefCell};

use crate::env::{Env, Event, Observer};
use crate::error::{Error, Fault, Refusal, Result};
use crate::ownership::flight::{Joined, Share, Single};
use crate::ownership::join::{first, Either};
use crate::s3::Bucket;

/// Ask again at most this long before the keys expire...
const MARGIN_MS: u64 = 5 * 60_000;
/// ...and keys this close to expiry are not used at all (a request signed now may arrive after it).
const HARD_MARGIN_MS: u64 = 10_000;
/// After a failed refresh, keys that still work are used for this long before the provider is asked again.
const RETRY_MS: u64 = 1_000;

/// Keys fetched at `fetched_ms` and expiring at `expires_ms` should be refreshed from this instant: five
/// minutes before expiry, or half their lifetime before it for keys that live less than ten minutes.
pub fn refresh_due(fetched_ms: u64, expires_ms: u64) -> u64 {
    let lifetime = expires_ms.saturating_sub(fetched_ms);
    expires_ms.saturating_sub(MARGIN_MS.min(lifetime / 2))
}

/// Keys no request is signed with any more: ten seconds before expiry, or a quarter of their lifetime.
pub fn expired(fetched_ms: u64, expires_ms: u64, now_ms: u64) -> bool {
    let lifetime = expires_ms.saturating_sub(fetched_ms);
    now_ms >= expires_ms.saturating_sub(HARD_MARGIN_MS.min(lifetime / 4))
}

#[derive(Clone, Copy)]
enum Held {
    /// Static keys (or a provider that gave keys without expiry): nothing to refresh.
    Forever,
    /// Provider keys not asked for yet.
    None,
    Until { fetched_ms: u64, expires_ms: u64 },
}

/// What a request needs before it is signed.
#[derive(Debug, PartialEq, Eq)]
pub enum Need {
    /// The keys held are good.
    Nothing,
    /// They work, but a refresh is due: callers that can wait for it do.
    Refresh,
    /// No usable keys: every caller waits for a refresh.
    Keys,
}

/// A refresh's outcome: `Err` says why, with what the provider threw as its `source`.
type Refreshed = core::result::Result<(), Fault>;

pub struct Rotation {
    held: Cell<Held>,
    /// The keys come from a provider (static keys are never asked for again).
    provided: bool,
    /// Not before this wall instant after a failed refresh (while the keys held still work).
    retry_after: Cell<u64>,
    flight: Single<Refreshed>,
}

impl Rotation {
    pub fn new(provider: bool) -> Self {
        let held = if provider { Held::None } else { Held::Forever };
        Rotation { held: Cell::new(held), provided: provider, retry_after: Cell::new(0), flight: Single::default() }
    }

    /// The store refused the keys held: a provider's are asked for again before the next request.
    pub fn distrust(&self) {
        if self.provided {
            self.held.set(Held::None);
        }
    }

    pub fn need(&self, now_ms: u64) -> Need {
        match self.held.get() {
            Held::Forever => Need::Nothing,
            Held::None => Need::Keys,
            Held::Until { fetched_ms, expires_ms } if expired(fetched_ms, expires_ms, now_ms) => Need::Keys,
            Held::Until { fetched_ms, expires_ms } => {
                if now_ms >= refresh_due(fetched_ms, expires_ms) && now_ms >= self.retry_after.get() {
                    Need::Refresh
                } else {
                    Need::Nothing
                }
            }
        }
    }

    /// Before signing a request for `key`: refreshes when the keys are unusable, or when a refresh is due
    /// and `can_wait` (lease renewals cannot: they use the keys that still work). Concurrent callers share
    /// one refresh. A failed refresh, or a provider that has not answered within `timeout_ms`, is an `auth`
    /// error only when no usable keys are left.
    pub async fn ready<E: Env>(&self, env: &E, observer: &dyn Observer, bucket: &RefCell<Bucket>, key: &str, can_wait: bool, timeout_ms: u32) -> Result<()> {
        let need = self.need(env.wall_ms());
        if need == Need::Nothing || (need == Need::Refresh && !can_wait) {
            return Ok(());
        }
        let outcome = self.refresh(env, observer, bucket, timeout_ms).await;
        match outcome {
            Err(_) if self.need(env.wall_ms()) != Need::Keys => Ok(()),
            Err(fault) => Err(Error::Auth(Box::new(Refusal {
                key: key.to_owned(),
                status: 0,
                code: "CredentialsProvider".into(),
                message: fault.detail,
                source: fault.source,
            }))),
            Ok(()) => Ok(()),
        }
    }

    /// Joins the refresh in flight, or leads one; `Err` carries what the provider threw, or that it did not
    /// answer within `timeout_ms` (a provider that hangs must not hang every request; its late answer is
    /// dropped, and the next refresh asks again).
    async fn refresh<E: Env>(&self, env: &E, observer: &dyn Observer, bucket: &RefCell<Bucket>, timeout_ms: u32) -> Refreshed {
        let joined = |_: &(), joined: Joined<Refreshed>| match joined {
            Joined::Done(outcome) => Some(outcome),
            Joined::Abandoned => None,
            Joined::Impatient => Some(Err(unanswered(timeout_ms))),
        };
        // A caller joining a refresh waits for it no longer than it would for its own.
        let how = Share { joined, ready: || None, patience: || env.sleep(timeout_ms) };
        let lead = || async move {
            let started = env.mono_ms();
            let answer = match first(env.credentials(), env.sleep(timeout_ms)).await {
                Either::Left(answer) => answer,
                Either::Right(()) => Err(unanswered(timeout_ms)),
            };
            let now = env.wall_ms();
            let outcome = answer.and_then(|c| {
                bucket.borrow_mut().set_credentials(&c.access_key_id, &c.secret_access_key, c.session_token.as_deref()).map_err(|e| Fault::new(e.message()))?;
                self.held.set(match c.expires_ms {
                    Some(expires_ms) => Held::Until { fetched_ms: now, expires_ms },
                    None => Held::Forever,
                });
                Ok(c.expires_ms.unwrap_or(0))
            });
            match &outcome {
                Ok(expires_ms) => observer.observe(Event::CredentialsRefreshed { expires_ms: *expires_ms, ms: env.mono_ms() - started }),
                Err(fault) => {
                    self.retry_after.set(now.saturating_add(RETRY_MS));
                    observer.observe(Event::CredentialsFailed { detail: &fault.detail });
                }
            }
            let outcome = outcome.map(|_| ());
            (outcome.clone(), outcome)
        };
        self.flight.share((), how, lead).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_five_minutes_early_or_halfway_through_short_lives() {
        let hour = 3_600_000;
        assert_eq!(refresh_due(0, hour), hour - MARGIN_MS);
        assert_eq!(refresh_due(1_000, 61_000), 31_000, "a minute-long key: halfway");
        assert_eq!(refresh_due(5_000, 5_000), 5_000, "already expired: now");
        assert_eq!(refresh_due(9_000, 5_000), 5_000, "expiry before it was fetched: at once");
    }

    #[test]
    fn keys_are_not_used_in_their_last_seconds() {
        let hour = 3_600_000;
        assert!(!expired(0, hour, hour - HARD_MARGIN_MS - 1));
        assert!(expired(0, hour, hour - HARD_MARGIN_MS));
        assert!(!expired(0, 40_000, 29_999), "a 40 s key: its last quarter is off limits");
        assert!(expired(0, 40_000, 30_000));
    }

    #[test]
    fn what_a_request_needs() {
        let r = Rotation::new(true);
        assert_eq!(r.need(0), Need::Keys, "nothing asked for yet");
        r.held.set(Held::Until { fetched_ms: 0, expires_ms: 600_000 });
        assert_eq!(r.need(299_999), Need::Nothing);
        assert_eq!(r.need(300_000), Need::Refresh);
        r.retry_after.set(301_000);
        assert_eq!(r.need(300_500), Need::Nothing, "a failed refresh is not retried at once while keys work");
        assert_eq!(r.need(590_000), Need::Keys);
        assert_eq!(Rotation::new(false).need(u64::MAX), Need::Nothing, "static keys");
    }

    #[test]
    fn short_lived_keys_stop_signing_a_quarter_of_their_lifetime_before_expiry() {
        // Lifetime 20 s: a quarter (5 s) is less than the 10 s margin.
        assert!(!expired(0, 20_000, 14_999));
        assert!(expired(0, 20_000, 15_000));
        // Lifetime 15 min: the 10 s margin.
        assert!(!expired(0, 900_000, 889_999));
        assert!(expired(0, 900_000, 890_000));
    }
}

fn unanswered(timeout_ms: u32) -> Fault {
    format!("the credentials function did not answer within {timeout_ms} ms").into()
}
