//! Reads: one GET or one ListObjectsV2 page, retried with jittered backoff (reads are safe to repeat), and
//! GETs decoded, read again while the body does not decode.

use super::{Budget, Seen, Store};
use crate::env::{Env, Event};
use crate::error::{Error, Fault, Result};
use crate::ownership::throttle::full_jitter_ms;
use crate::s3::list::{classify_list, ListAnswer, ListPage};
use crate::s3::{classify_get, GetAnswer};

/// Extra attempts of a failed read.
const READ_RETRIES: u32 = 3;
/// Reads of a record that does not decode before `get_decoded` gives up.
const UNDECODABLE_READS: usize = 5;

impl<E: Env> Store<E> {
    /// GET `key`: `Some((body, etag))`, or `None` when absent. Retries transient failures.
    pub async fn get(&self, key: &str, budget: Budget) -> Result<Option<(Vec<u8>, String)>> {
        self.get_seen(key, budget).await.map(|(found, _)| found)
    }

    /// `get`, with when the answer that counts was sent and arrived and the store's clock then.
    pub async fn get_seen(&self, key: &str, budget: Budget) -> Result<(Option<(Vec<u8>, String)>, Seen)> {
        let mut attempt = 0;
        loop {
            self.signable(key, budget).await?;
            let (signing_ms, departure) = self.signing();
            let req = self.bucket.borrow_mut().get(key, signing_ms)?;
            let (answer, seen) = self.exchange(req, budget, departure).await;
            let status = answer.as_ref().map_or(0, |r| r.status);
            let answer = classify_get(key, answer);
            let outcome = match &answer {
                GetAnswer::Found { .. } => "found",
                GetAnswer::Missing => "missing",
                GetAnswer::Retryable { .. } => "retryable",
                GetAnswer::Refused(_) => "refused",
            };
            self.answered(key, "read", outcome, status, seen.read);
            match answer {
                GetAnswer::Found { body, etag } => return Ok((Some((body, etag)), seen)),
                GetAnswer::Missing => return Ok((None, seen)),
                GetAnswer::Refused(e) => return Err(self.refused(e)),
                GetAnswer::Retryable(fault) => {
                    attempt += 1;
                    self.pause_before_retry(key, attempt, fault).await?;
                }
            }
        }
    }

    /// One page of the keys under `prefix` (ListObjectsV2, at most `max_keys`), after `token`; retried
    /// like a GET.
    pub async fn list(&self, prefix: &str, delimiter: Option<&str>, token: Option<&str>, max_keys: Option<u32>, budget: Budget) -> Result<ListPage> {
        let mut attempt = 0;
        loop {
            self.signable(prefix, budget).await?;
            let (signing_ms, departure) = self.signing();
            let req = self.bucket.borrow_mut().list(prefix, delimiter, token, max_keys, signing_ms)?;
            let (answer, seen) = self.exchange(req, budget, departure).await;
            let status = answer.as_ref().map_or(0, |r| r.status);
            let answer = classify_list(prefix, answer);
            let outcome = match &answer {
                ListAnswer::Page(_) => "found",
                ListAnswer::Retryable(_) => "retryable",
                ListAnswer::Refused(_) => "refused",
            };
            self.answered(prefix, "list", outcome, status, seen.read);
            match answer {
                ListAnswer::Page(page) => return Ok(page),
                ListAnswer::Refused(e) => return Err(self.refused(e)),
                ListAnswer::Retryable(fault) => {
                    attempt += 1;
                    self.pause_before_retry(prefix, attempt, fault).await?;
                }
            }
        }
    }

    /// The pause before retry `attempt` of a read of `key` that failed with `detail`: full jitter over an
    /// exponential window (50, 100, 200 ms; when throttled `throttle::full_jitter_ms`, one try more), or
    /// `transport` (`throttled`) once the retries are used up.
    async fn pause_before_retry(&self, key: &str, attempt: u32, fault: Fault) -> Result<()> {
        // A store that turns reads away is given the throttle's longer windows and one try more: at once
        // after a 429, after a first short retry for a 503 SlowDown (a brief burst, like any 5xx).
        let throttled = fault.status == 429 || (fault.code == "SlowDown" && attempt > 1);
        if attempt > READ_RETRIES + u32::from(throttled) {
            let detail = format!("{} (gave up after {attempt} attempts)", fault.detail);
            let key = key.to_owned();
            return Err(if throttled { Error::throttled(key, Fault { detail, ..fault }) } else { Error::transport(key, Fault { detail, ..fault }) });
        }
        let window = 50u64 << (attempt - 1);
        let backoff_ms =
            if throttled { full_jitter_ms(attempt, self.env.random_u64(), u64::MAX) } else { (self.env.random_u64() % window + 1) as u32 };
        self.observer.observe(Event::ReadRetried { key, attempt, backoff_ms, detail: &fault.detail });
        self.env.sleep(backoff_ms).await;
        Ok(())
    }

    /// GETs `key` and decodes it. A body that does not decode is read again: a truncated or garbled
    /// transfer looks the same as a corrupt record, and only the record reads the same every time. So it
    /// is `corrupt-record` only after the same bytes under the same token failed three reads in a row
    /// (`once`: at the first); bodies that keep changing are a broken transfer (`transport`).
    pub async fn get_decoded<T>(
        &self,
        key: &str,
        budget: Budget,
        decode: impl Fn(&[u8], &str) -> Result<T>,
        once: bool,
    ) -> Result<Option<T>> {
        self.get_decoded_seen(key, budget, decode, once).await.map(|(found, _)| found)
    }

    /// `get_decoded`, with how the read that decided was seen (`get_seen`).
    pub async fn get_decoded_seen<T>(
        &self,
        key: &str,
        budget: Budget,
        decode: impl Fn(&[u8], &str) -> Result<T>,
        once: bool,
    ) -> Result<(Option<T>, Seen)> {
        let mut last: Option<(Vec<u8>, String)> = None;
        let mut same = 0;
        for _ in 0..UNDECODABLE_READS {
            let (found, seen) = self.get_seen(key, budget).await?;
            let Some((body, etag)) = found else { return Ok((None, seen)) };
            let e = match decode(&body, &etag) {
                Ok(record) => return Ok((Some(record), seen)),
                Err(e) => e,
            };
            if last.as_ref().is_some_and(|(b, t)| *b == body && *t == etag) {
                same += 1;
            } else {
                same = 1;
                last = Some((body, etag));
            }
            if same == 3 || once {
                return Err(e);
            }
        }
        Err(Error::transport(
            key.to_owned(),
            format!("read {UNDECODABLE_READS} undecodable bodies that differ from read to read (a broken transfer)"),
        ))
    }
}
