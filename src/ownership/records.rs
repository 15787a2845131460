//! The records in the bucket (SPEC §2), wire-compatible with celld: what they look like on the wire, how
//! they decode (unknown fields ignored; anything else malformed is `corrupt-record`, never "absent"), and
//! the guard/outcome vocabulary of conditional writes.

use crate::prelude::*;
use crate::error::{msg, Error, Failure, Result};
use crate::ownership::json::{self, missing, once, ObjectWriter};

/// Largest epoch we write or accept: JS numbers hold integers exactly only up to 2^53 - 1.
pub const MAX_EPOCH: u64 = (1 << 53) - 1;

/// `cells/<cell>/own.json`. `node` is empty when the cell is released (the epoch is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRecord {
    pub node: String,
    pub epoch: u64,
    /// The token to guard the next write with, exactly as the store sent it.
    pub etag: String,
    /// The writer's nonce, when this library wrote the record (celld writes none).
    pub nonce: Option<String>,
}

impl OwnerRecord {
    pub fn is_released(&self) -> bool {
        self.node.is_empty()
    }
}

/// `nodes/<node>.json`: the node's lease, valid until `expires_ms` on the writer's wall clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLeaseRecord {
    pub node: String,
    pub expires_ms: u64,
    pub addr: String,
    pub etag: String,
    pub nonce: Option<String>,
}

/// The precondition of a conditional PUT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasGuard {
    /// `If-None-Match: *`: create only.
    Absent,
    /// `If-Match: <etag>`: replace only this version.
    Match(String),
}

/// How a conditional write ended, once settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasOutcome {
    Applied,
    Rejected,
}

fn corrupt(key: &str, detail: impl Into<String>) -> Error {
    Error::CorruptRecord(Box::new(Failure { key: key.to_owned(), detail: detail.into() }))
}

/// `{"node":"…","epoch":N,"nonce":"…"}`.
pub fn encode_owner(node: &str, epoch: u64, nonce: &str) -> Vec<u8> {
    ObjectWriter::new().str("node", node).uint("epoch", epoch).str("nonce", nonce).finish().into_bytes()
}

/// `{"node":"…","expires_ms":N,"addr":"…","nonce":"…"}`.
pub fn encode_lease(node: &str, expires_ms: u64, addr: &str, nonce: &str) -> Vec<u8> {
    let mut w = ObjectWriter::new();
    w.str("node", node).uint("expires_ms", expires_ms);
    w.str("addr", addr).str("nonce", nonce).finish().into_bytes()
}

/// Decodes `own.json` read from `key` with token `etag`.
pub fn decode_owner(key: &str, body: &[u8], etag: &str) -> Result<OwnerRecord> {
    let (mut node, mut epoch, mut nonce) = (None, None, None);
    json::object(body, |name, r| match name {
        "node" => once(&mut node, name, r.string()?),
        "epoch" => once(&mut epoch, name, r.uint()?),
        "nonce" => once(&mut nonce, name, r.opt_string()?),
        _ => r.skip(),
    })
    .map_err(|d| corrupt(key, d))?;
    let node = node.ok_or_else(|| corrupt(key, missing("node")))?;
    let epoch = epoch.ok_or_else(|| corrupt(key, missing("epoch")))?;
    if epoch > MAX_EPOCH {
        return Err(corrupt(key, msg!("epoch ", epoch, " exceeds 2^53 - 1")));
    }
    Ok(OwnerRecord { node, epoch, etag: etag.to_owned(), nonce: nonce.flatten() })
}

/// Decodes `nodes/<node>.json` read from `key` with token `etag`.
pub fn decode_lease(key: &str, body: &[u8], etag: &str) -> Result<NodeLeaseRecord> {
    let (mut node, mut expires_ms, mut addr, mut nonce) = (None, None, None, None);
    json::object(body, |name, r| match name {
        "node" => once(&mut node, name, r.string()?),
        "expires_ms" => once(&mut expires_ms, name, r.uint()?),
        "addr" => once(&mut addr, name, r.string()?),
        "nonce" => once(&mut nonce, name, r.opt_string()?),
        _ => r.skip(),
    })
    .map_err(|d| corrupt(key, d))?;
    Ok(NodeLeaseRecord {
        node: node.ok_or_else(|| corrupt(key, missing("node")))?,
        expires_ms: expires_ms.ok_or_else(|| corrupt(key, missing("expires_ms")))?,
        addr: addr.unwrap_or_default(),
        etag: etag.to_owned(),
        nonce: nonce.flatten(),
    })
}

/// The writer nonce of any record this library wrote, to recognise "my write landed" on readback.
pub fn decode_nonce(key: &str, body: &[u8]) -> Result<Option<String>> {
    let mut nonce = None;
    json::object(body, |name, r| match name {
        "nonce" => once(&mut nonce, name, r.opt_string()?),
        _ => r.skip(),
    })
    .map_err(|d| corrupt(key, d))?;
    Ok(nonce.flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_round_trip_and_celld_shapes() {
        let body = encode_owner("edge-7", 3, "n1");
        assert_eq!(body, br#"{"node":"edge-7","epoch":3,"nonce":"n1"}"#);
        let r = decode_owner("k", &body, "\"e\"").unwrap();
        assert_eq!((r.node.as_str(), r.epoch, r.nonce.as_deref()), ("edge-7", 3, Some("n1")));
        // What celld writes: no nonce; released is an empty node.
        let r = decode_owner("k", br#"{"node":"","epoch":9}"#, "t").unwrap();
        assert!(r.is_released());
        assert_eq!((r.epoch, r.nonce, r.etag.as_str()), (9, None, "t"));
        // Unknown fields are ignored.
        let r = decode_owner("k", br#"{"epoch":2,"x":[1,{"y":null}],"node":"a"}"#, "t").unwrap();
        assert_eq!(r.node, "a");
        // Escapes survive.
        let body = encode_owner("q\"\\\u{1}é", 1, "n");
        assert_eq!(decode_owner("k", &body, "t").unwrap().node, "q\"\\\u{1}é");
    }

    #[test]
    fn lease_round_trip_and_celld_extras() {
        let body = encode_lease("n", 1_700_000_000_000, "10.0.0.1:7000", "z");
        let r = decode_lease("k", &body, "t").unwrap();
        assert_eq!((r.expires_ms, r.addr.as_str()), (1_700_000_000_000, "10.0.0.1:7000"));
        let celld = br#"{"node":"n","expires_ms":5,"addr":"a:1","load":0.5,"log":[],"peer_protocol":2,
            "probe_public_key":"abc","ownership_index_generation":7}"#;
        assert_eq!(decode_lease("k", celld, "t").unwrap().addr, "a:1");
        let r = decode_lease("k", br#"{"node":"n","expires_ms":5,"nonce":null}"#, "t").unwrap();
        assert_eq!((r.addr.as_str(), r.nonce), ("", None));
    }

    #[test]
    fn nonces_of_any_record() {
        assert_eq!(decode_nonce("k", &encode_owner("a", 1, "n1")).unwrap().as_deref(), Some("n1"));
        assert_eq!(decode_nonce("k", &encode_lease("a", 1, "x", "n2")).unwrap().as_deref(), Some("n2"));
        assert_eq!(decode_nonce("k", br#"{"node":"a","epoch":1}"#).unwrap(), None);
        assert_eq!(decode_nonce("k", br#"{"nonce":null,"z":{}}"#).unwrap(), None);
        for body in [&b"[]"[..], b"", br#"{"nonce":1}"#, br#"{"nonce":"a","nonce":"b"}"#] {
            assert_eq!(decode_nonce("k", body).unwrap_err().code(), "corrupt-record");
        }
    }

    #[test]
    fn malformed_records_are_corrupt_naming_the_key() {
        let cases: &[&[u8]] = &[
            b"",
            b"<html>",
            b"{}",
            br#"{"node":"a"}"#,
            br#"{"node":1,"epoch":1}"#,
            br#"{"node":"a","epoch":-1}"#,
            br#"{"node":"a","epoch":1.5}"#,
            br#"{"node":"a","epoch":9007199254740992}"#,
            br#"{"node":"a","epoch":1"#,
            b"\xff\xfe",
            br#"[1,2]"#,
            br#"{"node":"a","epoch":1,"nonce":5}"#,
            br#"{"node":"a","epoch":1,"epoch":2}"#,
            br#"["a",1]"#,
        ];
        for body in cases {
            let e = decode_owner("cells/c/own.json", body, "t").unwrap_err();
            assert_eq!(e.code(), "corrupt-record");
            assert!(e.to_string().contains("cells/c/own.json"), "{e}");
        }
        for body in [
            &b"{}"[..],
            br#"{"node":"n","expires_ms":"soon"}"#,
            br#"{"node":"n","expires_ms":-5}"#,
            br#"{"node":"n","expires_ms":5,"addr":null}"#,
            br#"{"node":"n","expires_ms":5,"node":"m"}"#,
            br#"["n",5]"#,
        ] {
            assert_eq!(decode_lease("nodes/n.json", body, "t").unwrap_err().code(), "corrupt-record");
        }
    }
}
