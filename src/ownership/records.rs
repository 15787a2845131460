//! The records in the bucket (SPEC §2), wire-compatible with celld: what they look like on the wire, how
//! they decode (unknown fields ignored; anything else malformed is `corrupt-record`, never "absent"), and
//! the guard/outcome vocabulary of conditional writes.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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

#[derive(Serialize, Deserialize)]
struct OwnerWire<'a> {
    node: std::borrow::Cow<'a, str>,
    epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nonce: Option<std::borrow::Cow<'a, str>>,
}

#[derive(Serialize, Deserialize)]
struct LeaseWire<'a> {
    node: std::borrow::Cow<'a, str>,
    expires_ms: u64,
    #[serde(default)]
    addr: std::borrow::Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nonce: Option<std::borrow::Cow<'a, str>>,
}

fn corrupt(key: &str, detail: impl Into<String>) -> Error {
    Error::CorruptRecord { key: key.to_owned(), detail: detail.into() }
}

/// `{"node":"…","epoch":N,"nonce":"…"}`.
pub fn encode_owner(node: &str, epoch: u64, nonce: &str) -> Vec<u8> {
    let wire = OwnerWire { node: node.into(), epoch, nonce: Some(nonce.into()) };
    serde_json::to_vec(&wire).expect("a struct of strings and integers always serializes")
}

/// `{"node":"…","expires_ms":N,"addr":"…","nonce":"…"}`.
pub fn encode_lease(node: &str, expires_ms: u64, addr: &str, nonce: &str) -> Vec<u8> {
    let wire = LeaseWire { node: node.into(), expires_ms, addr: addr.into(), nonce: Some(nonce.into()) };
    serde_json::to_vec(&wire).expect("a struct of strings and integers always serializes")
}

/// Decodes `own.json` read from `key` with token `etag`.
pub fn decode_owner(key: &str, body: &[u8], etag: &str) -> Result<OwnerRecord> {
    let wire: OwnerWire = serde_json::from_slice(body).map_err(|e| corrupt(key, e.to_string()))?;
    if wire.epoch > MAX_EPOCH {
        return Err(corrupt(key, format!("epoch {} exceeds 2^53 - 1", wire.epoch)));
    }
    Ok(OwnerRecord {
        node: wire.node.into_owned(),
        epoch: wire.epoch,
        etag: etag.to_owned(),
        nonce: wire.nonce.map(|n| n.into_owned()),
    })
}

/// Decodes `nodes/<node>.json` read from `key` with token `etag`.
pub fn decode_lease(key: &str, body: &[u8], etag: &str) -> Result<NodeLeaseRecord> {
    let wire: LeaseWire = serde_json::from_slice(body).map_err(|e| corrupt(key, e.to_string()))?;
    Ok(NodeLeaseRecord {
        node: wire.node.into_owned(),
        expires_ms: wire.expires_ms,
        addr: wire.addr.into_owned(),
        etag: etag.to_owned(),
        nonce: wire.nonce.map(|n| n.into_owned()),
    })
}

/// The writer nonce of any record this library wrote, to recognise "my write landed" on readback.
pub fn decode_nonce(key: &str, body: &[u8]) -> Result<Option<String>> {
    #[derive(Deserialize)]
    struct NonceOnly {
        #[serde(default)]
        nonce: Option<String>,
    }
    let wire: NonceOnly = serde_json::from_slice(body).map_err(|e| corrupt(key, e.to_string()))?;
    Ok(wire.nonce)
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
        ];
        for body in cases {
            let e = decode_owner("cells/c/own.json", body, "t").unwrap_err();
            assert_eq!(e.code(), "corrupt-record");
            assert!(e.to_string().contains("cells/c/own.json"), "{e}");
        }
        for body in [&b"{}"[..], br#"{"node":"n","expires_ms":"soon"}"#, br#"{"node":"n","expires_ms":-5}"#] {
            assert_eq!(decode_lease("nodes/n.json", body, "t").unwrap_err().code(), "corrupt-record");
        }
    }
}
