//! JS entry points of the SigV4 signer, shaped for speed: `js/api.js` reads and type-checks the options
//! object, then UTF-8-encodes every string field, NUL-separated, followed by the body, into ONE byte array
//! (one copy into wasm instead of one per field, and no per-character JS loop); the result comes back as
//! one NUL-separated string that JS splits.
//! Content checks (URL, datetime, ranges) happen here or in the signer, so bad input is always a typed
//! `invalid-input` error. The derived-key cache lives in a thread-local `Signer` shared by all calls.
//! Never panics, and never signs something other than what it was given: a stray NUL in any field shows up
//! as a field-count mismatch and is refused.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use super::js_error;
use crate::error::{Error, Result};
use crate::sigv4::{AmzDate, Credentials, Payload, PresignInput, SignInput, Signer};

thread_local! {
    /// One signer per wasm instance, so repeat calls with the same secret/date/region/service reuse the
    /// derived signing key.
    static SIGNER: RefCell<Signer> = RefCell::new(Signer::new());
}

/// Field separator of the packed strings; JS uses the same character.
const SEP: char = '\0';
/// Fixed fields before the header pairs: method, url, region, service, access key id, secret,
/// session token ("" = none), datetime ("" = use the `unix_ms` argument).
const FIXED: usize = 8;
/// AWS's bound for `X-Amz-Expires`, in seconds.
const MAX_EXPIRES_IN: f64 = 604_800.0;
/// Year 10000 in Unix ms: an `AmzDate` has four year digits.
const MAX_UNIX_MS: f64 = 253_402_300_800_000.0;

/// The packed request fields, split and checked.
struct Fields<'a> {
    method: &'a str,
    url: &'a str,
    region: &'a str,
    service: &'a str,
    access_key_id: &'a str,
    secret_access_key: &'a str,
    session_token: &'a str,
    datetime: &'a str,
    headers: Vec<(String, String)>,
}

/// Splits `input` at `fields_len` into the UTF-8 fields and the body bytes.
fn unpack(input: &[u8], fields_len: u32) -> Result<(&str, &[u8])> {
    let (fields, body) = input
        .split_at_checked(fields_len as usize)
        .ok_or_else(|| Error::invalid("packed request is shorter than its fields"))?;
    Ok((utf8(fields)?, body))
}

fn utf8(fields: &[u8]) -> Result<&str> {
    std::str::from_utf8(fields).map_err(|_| Error::invalid("request fields are not UTF-8"))
}

impl<'a> Fields<'a> {
    fn split(packed: &'a str, header_count: u32) -> Result<Self> {
        let mut parts = packed.split(SEP);
        let mut fixed = [""; FIXED];
        for slot in fixed.iter_mut() {
            *slot = parts.next().ok_or_else(nul_inside)?;
        }
        let mut headers = Vec::with_capacity(header_count as usize);
        for _ in 0..header_count {
            let name = parts.next().ok_or_else(nul_inside)?;
            let value = parts.next().ok_or_else(nul_inside)?;
            headers.push((name.to_owned(), value.to_owned()));
        }
        if parts.next().is_some() {
            return Err(nul_inside());
        }
        let [method, url, region, service, access_key_id, secret_access_key, session_token, datetime] =
            fixed;
        Ok(Fields {
            method,
            url,
            region,
            service,
            access_key_id,
            secret_access_key,
            session_token,
            datetime,
            headers,
        })
    }

    fn credentials(&self) -> Credentials<'a> {
        Credentials {
            access_key_id: self.access_key_id,
            secret_access_key: self.secret_access_key,
            session_token: (!self.session_token.is_empty()).then_some(self.session_token),
        }
    }

    /// The given ISO-8601 basic datetime, else the `Date` / clock reading JS passed as Unix ms.
    fn datetime(&self, unix_ms: f64) -> Result<AmzDate> {
        if !self.datetime.is_empty() {
            return AmzDate::parse(self.datetime);
        }
        if !(unix_ms.is_finite() && (0.0..MAX_UNIX_MS).contains(&unix_ms)) {
            return Err(Error::invalid("datetime is not a valid Date between 1970 and 9999"));
        }
        Ok(AmzDate::from_unix_ms(unix_ms as u64))
    }
}

fn nul_inside() -> Error {
    Error::invalid("request fields and header names/values must not contain NUL characters")
}

/// Signs with header auth. `input` is the packed fields (`fields_len` bytes) followed by the body.
/// Returns `url NUL name NUL value ...` (lower-case header names).
#[wasm_bindgen(js_name = signPacked)]
pub fn sign_packed(
    input: &[u8],
    fields_len: u32,
    header_count: u32,
    unsigned_payload: bool,
    unix_ms: f64,
) -> Result<String, JsValue> {
    let signed = unpack(input, fields_len).and_then(|(packed, body)| {
        let fields = Fields::split(packed, header_count)?;
        let payload = if unsigned_payload { Payload::Unsigned } else { Payload::Bytes(body) };
        sign(&fields, payload, unix_ms)
    });
    signed.map_err(js_error)
}

fn sign(fields: &Fields<'_>, payload: Payload<'_>, unix_ms: f64) -> Result<String> {
    let datetime = fields.datetime(unix_ms)?;
    let credentials = fields.credentials();
    let input = SignInput {
        method: fields.method,
        url: fields.url,
        headers: &fields.headers,
        payload,
        region: fields.region,
        service: fields.service,
        credentials: &credentials,
        datetime: &datetime,
    };
    let signed = SIGNER.with(|s| s.borrow_mut().sign(&input))?;
    let len = signed.url.len() + signed.headers.iter().map(|(n, v)| n.len() + v.len() + 2).sum::<usize>();
    let mut out = String::with_capacity(len);
    out.push_str(&signed.url);
    for (name, value) in &signed.headers {
        out.push(SEP);
        out.push_str(name);
        out.push(SEP);
        out.push_str(value);
    }
    Ok(out)
}

/// Presigns a URL (query-string auth). `input` holds only the packed fields. `expires_in` arrives as a JS
/// number and must be a whole number of seconds in 1..=604800. Returns the URL.
#[wasm_bindgen(js_name = presignPacked)]
pub fn presign_packed(input: &[u8], header_count: u32, expires_in: f64, unix_ms: f64) -> Result<String, JsValue> {
    presign(input, header_count, expires_in, unix_ms).map_err(js_error)
}

fn presign(input: &[u8], header_count: u32, expires_in: f64, unix_ms: f64) -> Result<String> {
    let fields = Fields::split(utf8(input)?, header_count)?;
    if !(expires_in.fract() == 0.0 && (1.0..=MAX_EXPIRES_IN).contains(&expires_in)) {
        // Integers only: formatting an f64 would pull ~10 KB of float printing into the wasm.
        let got = if expires_in.fract() == 0.0 && expires_in.abs() < 1e15 {
            format!("{}", expires_in as i64)
        } else {
            "a fraction, a huge number, infinity or NaN".to_owned()
        };
        return Err(Error::invalid(format!("expiresIn must be a whole number of seconds in 1..=604800, got {got}")));
    }
    let datetime = fields.datetime(unix_ms)?;
    let credentials = fields.credentials();
    let input = PresignInput {
        method: fields.method,
        url: fields.url,
        region: fields.region,
        service: fields.service,
        credentials: &credentials,
        datetime: &datetime,
        expires_in: expires_in as u64,
        signed_headers: &fields.headers,
    };
    SIGNER.with(|s| s.borrow_mut().presign(&input))
}
