//! What the bucket says about the fleet that shares it, read before an instance's first write (SPEC §2,
//! §2.1), never written:
//! - `<prefix>fleet/control.json`, the backend marker of a celld fork (ewhauser/celld's DynamoDB control
//!   plane; upstream celld never reads or writes it, and `fleet/` is a prefix celld reserves). A fork
//!   fleet that keeps its records in a table has every `cells/<cell>/own.json` here absent, and a claim
//!   made here would create a second owner at epoch 1 beside the table's: absent or `bucket` → go on;
//!   anything else → `unsupported-backend`, with nothing written.
//! - `<prefix>wake/format.json`, which celld v0.5+ writes when it initialises a bucket: present means a
//!   celld fleet shares the bucket, and every lease this library writes must then be one celld v0.6 reads
//!   as a live node that is never a target (`records::encode_celld_lease`). celld refuses to start while
//!   live leases sit in a bucket it has not initialised, so with `celld: true` an absent one is
//!   `uninitialized-fleet`, with nothing written; so is one celld is still migrating.
//!
//! Both are read at once (one round trip), by one caller at a time, and the verdict is kept for the
//! instance's life: it must never cost a request per claim.

use core::cell::RefCell;
use core::future::Future;
use serde::Deserialize;

use crate::env::Env;
use crate::error::{Error, Failure, Quoted, Result};
use crate::ownership::cas::{Budget, Store};
use crate::ownership::flight::{Joined, Share, Single};
use crate::ownership::join::join_all;
use crate::ownership::records::decode_object;

/// Where a celld fork keeps its backend marker, under the fleet's prefix.
pub const MARKER_KEY: &str = "fleet/control.json";

/// A celld fork's marker of a fleet whose records live in the bucket, byte for byte as it writes it.
pub const BUCKET_MARKER: &[u8] = br#"{"format":1,"backend":"bucket"}"#;

/// Where celld (v0.5+) records that it initialised the bucket, under the fleet's prefix.
pub const WAKE_FORMAT_KEY: &str = "wake/format.json";

/// The one marker format the fork (0.6) and this library read.
const FORMAT: u64 = 1;

/// The wake format celld v0.5-v0.6 writes and requires.
const WAKE_FORMAT: u8 = 2;

/// The fork's marker. It refuses a marker with fields it does not know, so this does too.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Marker {
    format: u64,
    backend: String,
    #[serde(default)]
    table: Option<String>,
    /// Read only to check their types, as the fork does.
    #[serde(default, rename = "region")]
    _region: Option<String>,
    #[serde(default, rename = "fleet")]
    _fleet: Option<String>,
}

/// celld's `wake/format.json`: `{"format":2}`, `"migrating":true` while it seeds the bucket's cells.
/// celld refuses fields it does not know, so this does too.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WakeFormat {
    format: u8,
    #[serde(default)]
    migrating: bool,
}

/// Who shares the bucket, as far as this library must know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fleet {
    /// A celld fleet has initialised the bucket (`wake/format.json`).
    pub celld: bool,
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
        "dynamodb" => refuse(format!(
            "the fleet keeps its ownership records in celld's \"dynamodb\" backend (table {}), which this library \
             cannot reach: every cell in the bucket would read as absent",
            Quoted(marker.table.as_deref().unwrap_or(""))
        )),
        other => refuse(format!("the fleet names backend {}, which this library cannot reach", Quoted(other))),
    }
}

/// Judges `wake/format.json` read from `key` (`None`: absent); `celld_required` is the option `celld:
/// true`.
pub fn judge_wake_format(key: &str, body: Option<&[u8]>, celld_required: bool) -> Result<Fleet> {
    let uninitialized = |detail: &str| Err(Error::UninitializedFleet(Box::new(Failure::new(key, detail))));
    let Some(body) = body else {
        if celld_required {
            return uninitialized(
                "absent: no celld node has initialised this bucket, and celld refuses to while a lease here is live \
                 (the option celld: true says a celld fleet shares it); start a celld node first: it initialises the bucket",
            );
        }
        return Ok(Fleet { celld: false });
    };
    let wake: WakeFormat = decode_object(key, body)?;
    if wake.format != WAKE_FORMAT {
        let detail = format!("celld's wake format {}; this library knows format {WAKE_FORMAT} (celld v0.5-v0.6)", wake.format);
        return Err(Error::UnsupportedBackend(Box::new(Failure::new(key, detail))));
    }
    if wake.migrating {
        return uninitialized(
            "celld is initialising this bucket (\"migrating\": true) and stops at any live lease here: try again once it has finished",
        );
    }
    Ok(Fleet { celld: true })
}

/// The fleet under `prefix`, from the marker and `wake/format.json` as read (`None`: absent). The marker
/// is judged first: a fleet whose records live elsewhere is refused whatever else it says.
pub fn judge_fleet(prefix: &str, marker: Option<&[u8]>, wake: Option<&[u8]>, celld_required: bool) -> Result<Fleet> {
    if let Some(body) = marker {
        judge(&format!("{prefix}{MARKER_KEY}"), body)?;
    }
    judge_wake_format(&format!("{prefix}{WAKE_FORMAT_KEY}"), wake, celld_required)
}

/// Reads the marker and `wake/format.json` under `prefix` at once (one round trip) and judges them.
/// Writes nothing.
pub async fn read_fleet<E: Env>(store: &Store<E>, prefix: &str, celld_required: bool, budget: Budget) -> Result<Fleet> {
    let keys = [format!("{prefix}{MARKER_KEY}"), format!("{prefix}{WAKE_FORMAT_KEY}")];
    let checks: [fn(&str, &[u8]) -> Result<()>; 2] = [judge, |key, body| decode_object::<WakeFormat>(key, body).map(drop)];
    let reads = join_all(keys.iter().zip(checks).map(|(key, check)| read(store, key, check, budget))).await;
    let mut reads = reads.into_iter();
    let (Some(marker), Some(wake)) = (reads.next(), reads.next()) else { unreachable!("two reads joined") };
    let (marker, wake) = (marker?, wake?);
    judge_fleet(prefix, marker.as_deref(), wake.as_deref(), celld_required)
}

/// Reads the marker under `prefix` (the inspector, which has no `celld` option): `Ok` when it is absent or
/// names the bucket backend.
pub async fn check_bucket_backend<E: Env>(store: &Store<E>, prefix: &str, budget: Budget) -> Result<()> {
    let key = format!("{prefix}{MARKER_KEY}");
    match read(store, &key, judge, budget).await? {
        Some(body) => judge(&key, &body),
        None => Ok(()),
    }
}

/// A GET of `key`; a body `check` finds corrupt is read again, as records are (a truncated transfer looks
/// the same as a corrupt record, and only the record stays so). Any other verdict is the caller's.
async fn read<E: Env>(store: &Store<E>, key: &str, check: fn(&str, &[u8]) -> Result<()>, budget: Budget) -> Result<Option<Vec<u8>>> {
    let decode = |body: &[u8], _: &str| match check(key, body) {
        Err(e @ Error::CorruptRecord(_)) => Err(e),
        _ => Ok(body.to_vec()),
    };
    store.get_decoded(key, budget, decode, false).await
}

/// The fleet's verdict for one instance: checked once, by one caller at a time; concurrent callers wait
/// for that caller's answer (a `flight::Single`). A verdict is kept only when the bucket cannot change its
/// mind under this instance (a fleet to write in, or one that keeps its records elsewhere); any other
/// failure (an uninitialised celld fleet included) is tried again by the next write, and by every waiter
/// of the check that failed.
#[derive(Default)]
pub struct FleetMarker {
    known: RefCell<Option<Result<Fleet>>>,
    checking: Single<Result<Fleet>>,
}

/// Whether a check's verdict holds for the rest of the instance's life.
fn kept(verdict: &Result<Fleet>) -> bool {
    matches!(verdict, Ok(_) | Err(Error::UnsupportedBackend(_)))
}

impl FleetMarker {
    /// The fleet, once it is known that this instance may write in it, checking now (`check`: the reads
    /// and their judgement, `read_fleet`) if nobody is.
    pub async fn ensure<F: Future<Output = Result<Fleet>>>(&self, check: impl FnOnce() -> F) -> Result<Fleet> {
        let joined = |_: &(), joined: Joined<Result<Fleet>>| match joined {
            // A check that failed in a way not kept, or was cancelled: check again.
            Joined::Done(verdict) if kept(&verdict) => Some(verdict),
            Joined::Done(_) | Joined::Abandoned | Joined::Impatient => None,
        };
        let ready = || self.known.borrow().clone();
        let check = || async {
            let verdict = check().await;
            if kept(&verdict) {
                *self.known.borrow_mut() = Some(verdict.clone());
            }
            (verdict.clone(), verdict)
        };
        self.checking.share((), Share { joined, ready, patience: core::future::pending }, check).await
    }

    /// The verdict kept, once there is one that lets this instance write.
    pub fn known(&self) -> Option<Fleet> {
        self.known.borrow().as_ref().and_then(|v| v.as_ref().ok().copied())
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
    fn wake_format_says_whether_a_celld_fleet_shares_the_bucket() {
        let key = "p/wake/format.json";
        assert_eq!(judge_wake_format(key, None, false), Ok(Fleet { celld: false }));
        let e = judge_wake_format(key, None, true).unwrap_err();
        assert_eq!((e.code(), e.key()), ("uninitialized-fleet", Some(key)));
        assert!(e.to_string().contains("start a celld node first"), "{e}");
        for required in [false, true] {
            assert_eq!(judge_wake_format(key, Some(br#"{"format":2}"#), required), Ok(Fleet { celld: true }));
            assert_eq!(judge_wake_format(key, Some(br#" {"migrating":false,"format":2} "#), required), Ok(Fleet { celld: true }));
            // Mid-migration celld stops at any live lease: refused whether or not the option says so.
            let e = judge_wake_format(key, Some(br#"{"format":2,"migrating":true}"#), required).unwrap_err();
            assert_eq!(e.code(), "uninitialized-fleet", "{e}");
            let e = judge_wake_format(key, Some(br#"{"format":3}"#), required).unwrap_err();
            assert!(e.code() == "unsupported-backend" && e.to_string().contains("wake format 3"), "{e}");
        }
        for body in [&b""[..], b"[2]", b"{}", br#"{"format":"2"}"#, br#"{"format":256}"#, br#"{"format":2,"extra":1}"#, br#"{"format":2,"migrating":1}"#] {
            let e = judge_wake_format(key, Some(body), false).unwrap_err();
            assert_eq!(e.code(), "corrupt-record", "{:?}", String::from_utf8_lossy(body));
            assert!(e.to_string().contains(key), "{e}");
        }
    }

    #[test]
    fn the_marker_is_judged_before_the_wake_format() {
        let dynamo = br#"{"format":1,"backend":"dynamodb","table":"t"}"#;
        assert_eq!(judge_fleet("", Some(dynamo), Some(br#"{"format":2}"#), true).unwrap_err().code(), "unsupported-backend");
        assert_eq!(judge_fleet("", Some(dynamo), None, true).unwrap_err().code(), "unsupported-backend");
        assert_eq!(judge_fleet("t/", Some(BUCKET_MARKER), Some(br#"{"format":2}"#), false), Ok(Fleet { celld: true }));
        let e = judge_fleet("t/", None, None, true).unwrap_err();
        assert_eq!(e.key(), Some("t/wake/format.json"));
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
