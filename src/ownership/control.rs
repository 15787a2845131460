//! The fleet's backend marker (SPEC §2, celld >= 0.6): `<prefix>fleet/control.json` says where the fleet
//! keeps its ownership records. celld can keep them in a DynamoDB table instead of the bucket; then every
//! `cells/<cell>/own.json` here is absent, and a claim made here would create a second owner at epoch 1
//! beside the table's. So an instance reads the marker before its first write: absent → create the bucket
//! marker with `If-None-Match: *` (as a celld node does, so a celld node configured for a table refuses
//! this fleet instead of splitting it); `bucket` → go on; anything else → `unsupported-backend`, with
//! nothing written. One GET per instance (plus one create when absent), shared by concurrent callers and
//! kept for the instance's life; it must never cost a request per claim, and never write over a marker.

use core::cell::RefCell;
use serde::Deserialize;

use crate::env::Env;
use crate::error::{Error, Failure, Fault, Quoted, Result};
use crate::ownership::cas::{Budget, Store, MAX_RECONCILES};
use crate::ownership::flight::{Joined, Share, Single};
use crate::ownership::records::{decode_object, CasGuard};
use crate::s3::PutAnswer;

/// Where celld keeps the marker, under the fleet's prefix.
pub const MARKER_KEY: &str = "fleet/control.json";

/// The marker of a fleet whose records live in the bucket, byte for byte as celld writes it.
pub const BUCKET_MARKER: &[u8] = br#"{"format":1,"backend":"bucket"}"#;

/// The one marker format celld (0.6) and this library read.
const FORMAT: u64 = 1;

/// celld's marker. celld refuses a marker with fields it does not know, so this does too.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Marker {
    format: u64,
    backend: String,
    #[serde(default)]
    table: Option<String>,
    /// Read only to check their types, as celld does.
    #[serde(default, rename = "region")]
    _region: Option<String>,
    #[serde(default, rename = "fleet")]
    _fleet: Option<String>,
}

/// Judges a marker read from `key`: `Ok` when the fleet keeps its records in the bucket.
pub fn judge(key: &str, body: &[u8]) -> Result<()> {
    let marker: Marker = decode_object(key, body)?;
    let refuse = |detail: String| Err(Error::UnsupportedBackend(Box::new(Failure::new(key, detail))));
    if marker.format != FORMAT {
        return refuse(format!("marker format {}; this library reads format {FORMAT}", marker.format));
    }
    match marker.backend.as_str() {
        "bucket" => Ok(()),
        "dynamodb" => refuse(format!("the fleet keeps its ownership records in celld's \"dynamodb\" backend (table {}), which this library cannot reach: every cell in the bucket would read as absent", Quoted(marker.table.as_deref().unwrap_or("")))),
        other => refuse(format!("the fleet names backend {}, which this library cannot reach", Quoted(other))),
    }
}

/// Reads the marker under `prefix`, creating the bucket marker when there is none; `Ok` when the
/// fleet's records live in the bucket. Writes nothing but that create.
pub async fn ensure_bucket_backend<E: Env>(store: &Store<E>, prefix: &str, budget: Budget) -> Result<()> {
    let key = format!("{prefix}{MARKER_KEY}");
    let mut ambiguity: Option<Fault> = None;
    for _ in 0..=MAX_RECONCILES {
        if let Some(body) = read(store, &key, budget).await? {
            return judge(&key, &body);
        }
        match store.put_cas(&key, &CasGuard::Absent, BUCKET_MARKER.to_vec(), budget).await {
            PutAnswer::Applied { .. } => return Ok(()),
            // Someone created it first (or an earlier attempt of ours landed): read what is there.
            PutAnswer::Rejected | PutAnswer::Conflict { .. } => {}
            // Turned away for now (429), not applied: pause before reading again.
            PutAnswer::Throttled(_) => store.back_off(budget).await,
            // The marker's content says everything, whoever wrote it: reading it back settles this.
            PutAnswer::Ambiguous(fault) => ambiguity = Some(fault),
            PutAnswer::Refused(e) => return Err(e),
        }
    }
    let detail = format!("the marker stayed absent through {} attempts to create it", MAX_RECONCILES + 1);
    Err(match ambiguity {
        Some(last) => Error::ambiguous(key, Fault { detail: format!("{detail}; last: {}", last.detail), ..last }),
        None => Error::transport(key, detail),
    })
}

/// Reads the marker under `prefix` and never writes it (the inspector, which writes nothing of the fleet's):
/// `Ok` when it is absent or names the bucket backend.
pub async fn check_bucket_backend<E: Env>(store: &Store<E>, prefix: &str, budget: Budget) -> Result<()> {
    let key = format!("{prefix}{MARKER_KEY}");
    match read(store, &key, budget).await? {
        Some(body) => judge(&key, &body),
        None => Ok(()),
    }
}

/// A GET of the marker; a body that does not decode is read again, as records are (a truncated
/// transfer looks the same as a corrupt marker, and only the marker stays so).
async fn read<E: Env>(store: &Store<E>, key: &str, budget: Budget) -> Result<Option<Vec<u8>>> {
    let decode = |body: &[u8], _: &str| match judge(key, body) {
        Err(e @ Error::CorruptRecord(_)) => Err(e),
        _ => Ok(body.to_vec()),
    };
    store.get_decoded(key, budget, decode, false).await
}

/// The marker's verdict for one instance: checked once, by one caller at a time; concurrent callers wait
/// for that caller's answer (a `join::Flight`). A verdict is kept only when the bucket cannot change its
/// mind under this instance (a bucket fleet, or one that keeps its records elsewhere); any other failure
/// is tried again by the next write, and by every waiter of the check that failed.
#[derive(Default)]
pub struct FleetMarker {
    known: RefCell<Option<Result<()>>>,
    checking: Single<Result<()>>,
}

/// Whether a check's verdict holds for the rest of the instance's life.
fn kept(verdict: &Result<()>) -> bool {
    matches!(verdict, Ok(()) | Err(Error::UnsupportedBackend(_)))
}

impl FleetMarker {
    /// `Ok` once the fleet's records are known to live in the bucket, checking now if nobody is.
    pub async fn ensure<E: Env>(&self, store: &Store<E>, prefix: &str, budget: Budget) -> Result<()> {
        let joined = |_: &(), joined: Joined<Result<()>>| match joined {
            // A check that failed in a way not kept, or was cancelled: check again.
            Joined::Done(verdict) if kept(&verdict) => Some(verdict),
            Joined::Done(_) | Joined::Abandoned | Joined::Impatient => None,
        };
        let ready = || self.known.borrow().clone();
        let check = || async {
            let verdict = ensure_bucket_backend(store, prefix, budget).await;
            if kept(&verdict) {
                *self.known.borrow_mut() = Some(verdict.clone());
            }
            (verdict.clone(), verdict)
        };
        self.checking.share((), Share { joined, ready, patience: core::future::pending }, check).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_celld_writes_and_what_they_mean() {
        let key = "p/fleet/control.json";
        assert_eq!(judge(key, BUCKET_MARKER), Ok(()));
        assert_eq!(judge(key, br#" {"backend":"bucket","format":1,"table":null} "#), Ok(()));
        let dynamo = br#"{"format":1,"backend":"dynamodb","table":"celld-ctl","region":"us-east-2","fleet":"0f1e2d3c4b5a69788796a5b4c3d2e1f0"}"#;
        let e = judge(key, dynamo).unwrap_err();
        assert_eq!(e.code(), "unsupported-backend");
        let text = e.to_string();
        assert!(text.contains(key) && text.contains("\"dynamodb\"") && text.contains("\"celld-ctl\""), "{text}");
        let e = judge(key, br#"{"format":1,"backend":"spanner"}"#).unwrap_err();
        assert!(e.code() == "unsupported-backend" && e.to_string().contains("\"spanner\""), "{e}");
        let e = judge(key, br#"{"format":2,"backend":"bucket"}"#).unwrap_err();
        assert!(e.code() == "unsupported-backend" && e.to_string().contains("format 2"), "{e}");
    }

    #[test]
    fn a_marker_that_does_not_decode_is_corrupt_naming_the_key() {
        for body in [
            &b""[..],
            b"<html></html>",
            b"[1,\"bucket\"]",
            b"{}",
            br#"{"format":1}"#,
            br#"{"backend":"bucket"}"#,
            br#"{"format":"1","backend":"bucket"}"#,
            br#"{"format":1,"backend":"bucket","table":7}"#,
            br#"{"format":1,"backend":"bucket","extra":true}"#,
            br#"{"format":1,"backend":"bucket","backend":"dynamodb"}"#,
            br#"{"format":1,"backend":"bucket"}{"#,
        ] {
            let e = judge("fleet/control.json", body).unwrap_err();
            assert_eq!(e.code(), "corrupt-record", "{:?}", String::from_utf8_lossy(body));
            assert!(e.to_string().contains("fleet/control.json"), "{e}");
        }
        // A field celld does not know is named (an unknown field, as celld refuses it too).
        let e = judge("k", br#"{"format":1,"backend":"bucket","extra":true}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `extra`"), "{e}");
    }
}
