//! The three strings SigV4 chains together: the canonical request, the string to sign, and the
//! signature (HMAC of the string to sign under the derived key). Pure string assembly over parts the
//! other modules already canonicalized, written into buffers the `Signer` reuses. Must never hash or sign
//! anything but the exact text it assembled (that text is what `Signer::canonical_request` shows).

use hmac::Mac;
use sha2::{Digest, Sha256};

use super::encode::push_hex;
use super::headers::Headers;
use super::key::HmacSha256;
use super::query::{self, Param};

pub(crate) const ALGORITHM: &str = "AWS4-HMAC-SHA256";
pub(crate) const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
/// SHA-256 of the empty string.
pub(crate) const EMPTY_SHA256: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Everything the canonical request is made of, each part already canonical.
pub(crate) struct Parts<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub params: &'a [Param],
    pub headers: &'a Headers,
    pub host: &'a str,
    pub signed_names: &'a str,
    pub payload_hash: &'a str,
}

/// Writes the canonical request into `out` (cleared first).
pub(crate) fn write_request(out: &mut String, p: &Parts<'_>) {
    out.clear();
    out.push_str(p.method);
    out.push('\n');
    out.push_str(p.path);
    out.push('\n');
    query::push_canonical(out, p.params);
    out.push('\n');
    p.headers.push_canonical(out, p.host);
    out.push('\n');
    out.push_str(p.signed_names);
    out.push('\n');
    out.push_str(p.payload_hash);
}

/// Writes the string to sign into `out` (cleared first).
pub(crate) fn write_string_to_sign(out: &mut String, datetime: &str, scope: &str, request: &str) {
    out.clear();
    out.push_str(ALGORITHM);
    out.push('\n');
    out.push_str(datetime);
    out.push('\n');
    out.push_str(scope);
    out.push('\n');
    push_hex(out, &Sha256::digest(request.as_bytes()));
}

/// Appends the hex signature of `string_to_sign` under the keyed HMAC `mac`.
pub(crate) fn push_signature(out: &mut String, mac: &HmacSha256, string_to_sign: &str) {
    let mut mac = mac.clone();
    mac.update(string_to_sign.as_bytes());
    push_hex(out, &mac.finalize().into_bytes());
}

/// Appends the hex SHA-256 of a payload (of an empty one, every GET's, without hashing).
pub(crate) fn push_payload_sha256(out: &mut String, bytes: &[u8]) {
    if bytes.is_empty() {
        out.push_str(EMPTY_SHA256);
    } else {
        push_hex(out, &Sha256::digest(bytes));
    }
}
