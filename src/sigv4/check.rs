//! Validation of the signer's scalar inputs (method, credentials, region, service, payload hash), each
//! failing with `invalid-input` and a message naming the input. Must never echo a secret or token.

use super::headers::is_token_byte;
use super::{all_bytes, Credentials};
use crate::error::{joined, Error, Result};

/// The methods fetch sends upper-case however they are written (the Fetch standard's "normalize").
const NORMALIZED: [&str; 6] = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];

/// Checks a method and returns it as fetch sends it: one of `NORMALIZED` in any case is upper-cased (as
/// botocore signs it), any other is sent, so signed, as written.
pub(crate) fn method(method: &str) -> Result<&str> {
    if method.is_empty() || !all_bytes(method, is_token_byte) {
        return Err(Error::invalid_value("method ", method, " is not an HTTP method"));
    }
    Ok(NORMALIZED.into_iter().find(|m| m.eq_ignore_ascii_case(method)).unwrap_or(method))
}

/// Region and service are credential-scope parts: non-empty, and free of `/` or anything odd.
pub(crate) fn scope_part(what: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(joined(&[what, " is empty"])));
    }
    if !all_bytes(value, |b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(Error::invalid_value(&joined(&[what, " "]), value, " may only hold letters, digits, '-', '_' and '.'"));
    }
    Ok(())
}

pub(crate) fn credentials(c: &Credentials<'_>) -> Result<()> {
    let ak = c.access_key_id;
    if ak.is_empty() {
        return Err(Error::invalid("access key id is empty"));
    }
    // It is written into `Credential=AK/scope`: a `/`, `,` or space would make that ambiguous.
    if !all_bytes(ak, |b| b.is_ascii_graphic() && b != b'/' && b != b',')
    {
        return Err(Error::invalid(
            "access key id holds a character that cannot appear in a credential scope",
        ));
    }
    if c.secret_access_key.is_empty() {
        return Err(Error::invalid("secret access key is empty"));
    }
    if let Some(token) = c.session_token {
        if token.is_empty() {
            return Err(Error::invalid("session token is empty (give none instead)"));
        }
        if !all_bytes(token, |b| b.is_ascii_graphic()) {
            return Err(Error::invalid(
                "session token holds a space, control or non-ASCII character",
            ));
        }
    }
    Ok(())
}

/// A precomputed payload hash or a special value such as `STREAMING-UNSIGNED-PAYLOAD-TRAILER`.
pub(crate) fn payload_hash(hash: &str) -> Result<()> {
    if hash.is_empty() || !all_bytes(hash, |b| b.is_ascii_graphic()) {
        return Err(Error::invalid_value("payload hash ", hash, " is empty or not visible ASCII"));
    }
    Ok(())
}
