//! JS entry points of the SigV4 signer: the fast path across the boundary, kept because per-call
//! conversion of an options object costs the signing goal (bench/). **The buffer format lives here, in
//! one place**; js/sign.js follows it, and tests/node/sign-format.test.mjs checks the two agree on every
//! constant (`signBufferFormat` below).
//!
//! - One I/O buffer, owned by Rust in wasm memory; JS learns its address with `ioBuffer(len)` and writes
//!   the request there with `TextEncoder.encodeInto`.
//! - A request is UTF-8: the `FIXED` fields (method, url, region, service, access key id, secret, session
//!   token or "", datetime or "" for "use the `unix_ms` argument"), then each header name and value,
//!   every field preceded by `SEP` except the first; for `signIo` the body follows the fields (payload
//!   `PAYLOAD_BODY`), or is not signed (`PAYLOAD_UNSIGNED`), or was hashed beforehand in pieces
//!   (`PAYLOAD_HASHED`: `hashBody` on each piece of at most `IO_KEEP` bytes, the first with `first`), so
//!   that a body of any size never needs a buffer of its size in wasm memory, which cannot hold 2 GiB.
//! - `signIo`'s answer, written back into the same buffer: `url SEP name SEP value ...`, the url empty
//!   when it is the one given, a name replaced by one code character when it has one: `NAME_CODES[i]` is
//!   `i + 1`, the caller's header `i < CALLER_CODES` is `CALLER_CODE + i`. `presignIo` answers the URL.
//! - The buffer only grows, except that one grown past `IO_KEEP` is cut back after use (JS must then ask
//!   for the address again); every byte JS may write is memory this `Vec` already holds initialized. A
//!   length past `MAX_IO`, or one wasm memory cannot hold, is `invalid-input`, never a trap.
//!
//! Content checks (URL, datetime, ranges) happen here or in the signer, so bad input is always a typed
//! `invalid-input` error. Never panics, and never signs something other than what it was given: a stray
//! NUL in any field shows up as a field-count mismatch and is refused.

use std::cell::RefCell;

use sha2::{Digest, Sha256};
use wasm_bindgen::prelude::*;

use crate::error::{joined, Error, Result};
use crate::sigv4::{AmzDate, Credentials, Payload, PresignInput, SignInput, Signer, MAX_EXPIRES_SECS};

#[wasm_bindgen]
extern "C" {
    /// What js/instance.js passes to `signerStart` (`signerHooks` there): the signer's error maker.
    /// Through it rather than super::error's `CelldEdgeError` construction, which needs js-sys:
    /// this file is all of the signing-only wasm's bindings, and that wasm carries no js-sys (an unused
    /// js-sys still links every binding it declares into the module; bench/README.md, its size).
    pub type SignerHooks;

    /// A `CelldEdgeError` with this `code` and message.
    #[wasm_bindgen(method)]
    fn error(this: &SignerHooks, code: &str, message: &str) -> JsValue;
}

/// The signer's state, one per wasm instance (`SIGNER`): the signer, so repeat calls with the same
/// secret/date/region/service reuse the derived signing key, and the I/O buffer shared with JS (see the
/// module comment).
struct SignerIo {
    hooks: SignerHooks,
    signer: Signer,
    io: SignBuffer,
    /// The body hashed so far by `hashBody` (for `PAYLOAD_HASHED`).
    body_hash: Option<Sha256>,
}

/// The I/O buffer, and the last request's header pairs and answer, kept so that their allocations are
/// reused.
struct SignBuffer {
    buf: Vec<u8>,
    headers: Vec<(String, String)>,
    answer: String,
}

/// Field separator of the packed strings (NUL).
const SEP: char = '\0';
/// Fixed fields before the header pairs: method, url, region, service, access key id, secret,
/// session token ("" = none), datetime ("" = use the `unix_ms` argument).
const FIXED: usize = 8;
/// Year 10000 in Unix ms: an `AmzDate` has four year digits.
const MAX_UNIX_MS: f64 = 253_402_300_800_000.0;
/// The I/O buffer is cut back to this after a larger request, so one big body does not pin its size.
const IO_KEEP: usize = 64 * 1024;
/// The longest I/O buffer JS may ask for: packed fields (3 bytes per UTF-16 unit) plus a body of at most
/// `IO_KEEP` bytes; a larger body is hashed in pieces.
const MAX_IO: usize = 64 * 1024 * 1024;
/// `signIo`'s payload argument: the body follows the fields; `UNSIGNED-PAYLOAD`; hashed by `hashBody`.
const PAYLOAD_BODY: u32 = 0;
const PAYLOAD_UNSIGNED: u32 = 1;
const PAYLOAD_HASHED: u32 = 2;

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
}

fn utf8(fields: &[u8]) -> Result<&str> {
    std::str::from_utf8(fields).map_err(|_| Error::invalid("request fields are not UTF-8"))
}

impl<'a> Fields<'a> {
    /// Splits the fixed fields, and `header_count` name/value pairs into `headers` (reusing its strings).
    fn split(packed: &'a str, header_count: u32, headers: &mut Vec<(String, String)>) -> Result<Self> {
        let mut parts = crate::sigv4::split_ascii(packed, |b| b == SEP as u8);
        let mut fixed = [""; FIXED];
        for slot in fixed.iter_mut() {
            *slot = parts.next().ok_or_else(nul_inside)?;
        }
        let count = header_count as usize;
        headers.truncate(count);
        for i in 0..count {
            let name = parts.next().ok_or_else(nul_inside)?;
            let value = parts.next().ok_or_else(nul_inside)?;
            match headers.get_mut(i) {
                Some((n, v)) => {
                    n.clear();
                    n.push_str(name);
                    v.clear();
                    v.push_str(value);
                }
                None => headers.push((name.to_owned(), value.to_owned())),
            }
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

/// The signer's JS error. Everything src/sigv4 and this file refuse is `invalid-input` (signing has no
/// other way to fail), so the message is made here instead of by `Error::message()`, whose texts for
/// every other kind would otherwise weigh in the signing-only wasm (bench/README.md, its size).
fn js_error(hooks: &SignerHooks, e: Error) -> JsValue {
    match e {
        Error::InvalidInput(m) => hooks.error("invalid-input", &joined(&["invalid input: ", &m])),
        // Not `other.code()`: its table of every kind's code would weigh in the signing-only wasm for a
        // case that never happens.
        _ => hooks.error("internal", "internal error: the signer failed in a way it never does"),
    }
}

fn nul_inside() -> Error {
    Error::invalid("request fields and header names/values must not contain NUL characters")
}

thread_local! {
    /// This instance's signer. Module state rather than a wasm-bindgen class: there is one per instance
    /// anyway, and a class's glue (handles, finalizer, stale-handle checks) weighs in the signing-only
    /// entry. js/sign.js starts it (`signerStart`) before its first call in an instance, so also in the
    /// instance that replaces one that trapped.
    static SIGNER: RefCell<Option<SignerIo>> = const { RefCell::new(None) };
    /// Test-only (`__celldTestTrap` of the signing-only wasm): the next signer call panics.
    #[cfg(not(feature = "ownership"))]
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// **Tests only**, in the signing-only wasm (the full wasm's is src/bindings/trap.rs's, which traps an
/// operation's poll): the next call of the signer panics (a trap under `panic = "abort"`, the panic hook
/// recording its message first) while it holds the signer, as a bug would. The package never re-exports
/// it (scripts/lib/bundle-sign.mjs bundles only the public API), so the published bundles carry only its
/// wasm export (bench/README.md, its weight); tests/node/sign-trap.test.mjs bundles an entry with it.
#[cfg(not(feature = "ownership"))]
#[wasm_bindgen(js_name = __celldTestTrap)]
pub fn test_trap() {
    ARMED.set(true);
}

/// Fires the test trap if it is armed (one function, not one per `with_signer` instance).
#[cfg(not(feature = "ownership"))]
#[inline(never)]
fn fire_test_trap() {
    if ARMED.take() {
        panic!("test trap");
    }
}

/// `signerStart(hooks)`: (re)starts this instance's signer; `hooks` from js/instance.js (only its error
/// maker is used).
#[wasm_bindgen(js_name = signerStart)]
pub fn signer_start(hooks: SignerHooks) {
    SIGNER.with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            *slot = Some(SignerIo::new(hooks));
        }
    });
}

/// Runs `f` on this instance's signer. Never panics: a signer not started, or one already in use (a
/// call from inside another, which js/sign.js never makes), is an error (a plain one: its hooks are out
/// of reach).
fn with_signer<T>(f: impl FnOnce(&mut SignerIo) -> Result<T, JsValue>) -> Result<T, JsValue> {
    SIGNER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => match slot.as_mut() {
            Some(signer) => {
                #[cfg(not(feature = "ownership"))]
                fire_test_trap();
                f(signer)
            }
            None => Err(JsValue::from_str("internal error: the signer was not started")),
        },
        Err(_) => Err(JsValue::from_str("internal error: the signer is already in use")),
    })
}

/// `ioBuffer(len)`: `SignerIo::io_buffer`.
#[wasm_bindgen(js_name = ioBuffer)]
pub fn io_buffer(len: usize) -> Result<usize, JsValue> {
    with_signer(|s| s.io_buffer(len))
}

/// `hashBody(len, first)`: `SignerIo::hash_body`.
#[wasm_bindgen(js_name = hashBody)]
pub fn hash_body(len: usize, first: bool) -> Result<(), JsValue> {
    with_signer(|s| s.hash_body(len, first))
}

/// `signIo(...)`: `SignerIo::sign_io`.
#[wasm_bindgen(js_name = signIo)]
pub fn sign_io(fields_len: usize, body_len: usize, header_count: u32, payload: u32, unix_ms: f64) -> Result<usize, JsValue> {
    with_signer(|s| s.sign_io(fields_len, body_len, header_count, payload, unix_ms))
}

/// `presignIo(...)`: `SignerIo::presign_io`.
#[wasm_bindgen(js_name = presignIo)]
pub fn presign_io(fields_len: usize, header_count: u32, expires_in: f64, unix_ms: f64) -> Result<usize, JsValue> {
    with_signer(|s| s.presign_io(fields_len, header_count, expires_in, unix_ms))
}

impl SignerIo {
    fn new(hooks: SignerHooks) -> SignerIo {
        SignerIo {
            hooks,
            signer: Signer::new(),
            io: SignBuffer { buf: Vec::new(), headers: Vec::new(), answer: String::new() },
            body_hash: None,
        }
    }

    /// Makes the I/O buffer at least `len` bytes long and returns its address in wasm memory. JS writes a
    /// request there (valid until the next call of this method or of `signIo`/`presignIo`/`hashBody`).
    /// Past `MAX_IO`, or past what wasm memory can still grow to, `invalid-input` (a `resize` would trap).
    fn io_buffer(&mut self, len: usize) -> Result<usize, JsValue> {
        let buf = &mut self.io.buf;
        if buf.len() < len {
            let more = len - buf.len();
            if len > MAX_IO || buf.try_reserve_exact(more).is_err() {
                return Err(js_error(&self.hooks, Error::invalid("request is too large to sign: its URL and headers take more than 64 MiB")));
            }
            buf.resize(len, 0);
        }
        Ok(buf.as_ptr() as usize)
    }

    /// Adds the first `len` bytes of the I/O buffer to the body's hash (`first`: a new body), for
    /// `signIo` with `PAYLOAD_HASHED`.
    fn hash_body(&mut self, len: usize, first: bool) -> Result<(), JsValue> {
        let piece = self.io.buf.get(..len).ok_or_else(|| js_error(&self.hooks, Error::invalid("body piece is longer than the I/O buffer")))?;
        if first {
            self.body_hash = Some(Sha256::new());
        }
        match self.body_hash.as_mut() {
            Some(hash) => hash.update(piece),
            None => return Err(js_error(&self.hooks, Error::invalid("body piece without a first one"))),
        }
        Ok(())
    }

    /// Signs with header auth. The I/O buffer holds the packed fields (`fields_len` bytes) followed, for
    /// `PAYLOAD_BODY`, by the body (`body_len` bytes). Writes `url NUL name NUL value ...` (lower-case
    /// header names) into the buffer and returns its length. The url is left out (empty) when it is the
    /// one given, and a name is one code character when `name_code` has one for it.
    fn sign_io(
        &mut self,
        fields_len: usize,
        body_len: usize,
        header_count: u32,
        payload: u32,
        unix_ms: f64,
    ) -> Result<usize, JsValue> {
        let SignerIo { hooks, signer, io, body_hash } = self;
        // Taken whatever happens: a later body starts from nothing.
        let hashed = body_hash.take().map(|hash| hex::encode(hash.finalize()));
        with_io(hooks, io, fields_len.saturating_add(body_len), &mut |input, headers, answer| {
            let (packed, body) = input.split_at(fields_len.min(input.len()));
            let fields = Fields::split(utf8(packed)?, header_count, headers)?;
            let payload = match (payload, hashed.as_deref()) {
                (PAYLOAD_BODY, _) => Payload::Bytes(body),
                (PAYLOAD_UNSIGNED, _) => Payload::Unsigned,
                (PAYLOAD_HASHED, Some(hash)) => Payload::BodyHash(hash),
                _ => return Err(Error::invalid("payload mode without its body")),
            };
            sign(signer, &fields, headers, payload, unix_ms, answer)
        })
    }

    /// Presigns a URL (query-string auth). The I/O buffer holds only the packed fields (`fields_len`
    /// bytes). `expires_in` arrives as a JS number and must be a whole number of seconds in 1..=604800.
    /// Writes the URL into the buffer and returns its length.
    fn presign_io(
        &mut self,
        fields_len: usize,
        header_count: u32,
        expires_in: f64,
        unix_ms: f64,
    ) -> Result<usize, JsValue> {
        let SignerIo { hooks, signer, io, .. } = self;
        with_io(hooks, io, fields_len, &mut |input, headers, answer| {
            let fields = Fields::split(utf8(input)?, header_count, headers)?;
            answer.push_str(&presign(signer, &fields, headers, expires_in, unix_ms)?);
            Ok(())
        })
    }
}

/// The wasm memory that `ioBuffer`'s address points into.
#[wasm_bindgen(js_name = ioMemory)]
pub fn io_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// What `with_io` runs: the request bytes, header pairs to fill, the answer to write.
type IoFn<'f> = &'f mut dyn FnMut(&[u8], &mut Vec<(String, String)>, &mut String) -> Result<()>;

/// Runs `f` on the first `len` bytes of the I/O buffer (the request), then writes the answer it built
/// into the buffer (moving the buffer if the answer outgrows it, or cutting it back to `IO_KEEP`) and
/// returns its length in bytes.
fn with_io(hooks: &SignerHooks, io: &mut SignBuffer, len: usize, f: IoFn<'_>) -> Result<usize, JsValue> {
    let SignBuffer { buf, headers, answer } = io;
    answer.clear();
    let done = match buf.get(..len) {
        Some(input) => f(input, headers, answer),
        None => Err(Error::invalid("packed request is longer than the I/O buffer")),
    };
    // On an error the buffer stays where it is: JS only learns that it moved from an answer.
    done.map_err(|e| js_error(hooks, e))?;
    if buf.len() < answer.len() {
        buf.resize(answer.len(), 0);
    }
    if buf.len() > IO_KEEP {
        buf.truncate(IO_KEEP.max(answer.len()));
        buf.shrink_to_fit();
    }
    buf[..answer.len()].copy_from_slice(answer.as_bytes());
    Ok(answer.len())
}

fn sign(
    signer: &mut Signer,
    fields: &Fields<'_>,
    headers: &[(String, String)],
    payload: Payload<'_>,
    unix_ms: f64,
    out: &mut String,
) -> Result<()> {
    let datetime = fields.datetime(unix_ms)?;
    let credentials = fields.credentials();
    let input = SignInput {
        method: fields.method,
        url: fields.url,
        headers,
        payload,
        region: fields.region,
        service: fields.service,
        credentials: &credentials,
        datetime: &datetime,
    };
    let signed = signer.sign_ref(&input)?;
    if signed.url != fields.url {
        out.push_str(signed.url);
    }
    for (name, value) in signed.signed.iter().chain(signed.unsigned) {
        out.push(SEP);
        match name_code(name, headers) {
            Some(code) => out.push(char::from(code)),
            None => out.push_str(name),
        }
        out.push(SEP);
        out.push_str(value);
    }
    out.push(SEP);
    out.push(char::from(AUTHORIZATION_CODE));
    out.push(SEP);
    out.push_str(signed.authorization);
    Ok(())
}

/// Codes (control characters, which no header name contains) that stand for a header name in
/// `signIo`'s answer, so JS stores the header under a string it already holds (a literal, or the
/// caller's own name) instead of slicing the name out of the answer: V8 stores a property under a fresh
/// string much more slowly (bench/).
const NAME_CODES: [&str; 4] = ["authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"];
/// `authorization`'s code (its index in `NAME_CODES` plus one).
const AUTHORIZATION_CODE: u8 = 1;
/// Code of the caller's header `i` (for `i < CALLER_CODES`): its name as given is already lower-case.
const CALLER_CODE: u8 = 0x10;
const CALLER_CODES: usize = 16;

fn name_code(name: &str, given: &[(String, String)]) -> Option<u8> {
    if let Some(i) = NAME_CODES.iter().position(|&n| n == name) {
        return Some(i as u8 + 1);
    }
    let i = given.iter().take(CALLER_CODES).position(|(n, _)| n == name)?;
    Some(CALLER_CODE + i as u8)
}

fn presign(
    signer: &mut Signer,
    fields: &Fields<'_>,
    headers: &[(String, String)],
    expires_in: f64,
    unix_ms: f64,
) -> Result<String> {
    // js/sign.js refuses such a value first, naming it (JS writes a number as JS does); this guards the
    // conversion below.
    if !(expires_in.fract() == 0.0 && (1.0..=MAX_EXPIRES_SECS as f64).contains(&expires_in)) {
        return Err(Error::invalid("expiresIn must be a whole number of seconds in 1..=604800"));
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
        signed_headers: headers,
    };
    signer.presign(&input)
}

/// The format's constants as JS sees them, for the test that js/sign.js agrees (not used by sign.js); only
/// in the full wasm (the signing-only one, built from this same file, carries no serde-wasm-bindgen).
#[cfg(feature = "ownership")]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Format {
    sep: char,
    fixed_fields: usize,
    io_keep: usize,
    name_codes: [&'static str; 4],
    authorization_code: u8,
    caller_code: u8,
    caller_codes: usize,
    max_io: usize,
    payload_body: u32,
    payload_unsigned: u32,
    payload_hashed: u32,
    max_expires_in: u64,
}

#[cfg(feature = "ownership")]
#[wasm_bindgen(js_name = signBufferFormat)]
pub fn sign_buffer_format() -> JsValue {
    let format = Format {
        sep: SEP,
        fixed_fields: FIXED,
        io_keep: IO_KEEP,
        name_codes: NAME_CODES,
        authorization_code: AUTHORIZATION_CODE,
        caller_code: CALLER_CODE,
        caller_codes: CALLER_CODES,
        max_io: MAX_IO,
        payload_body: PAYLOAD_BODY,
        payload_unsigned: PAYLOAD_UNSIGNED,
        payload_hashed: PAYLOAD_HASHED,
        max_expires_in: MAX_EXPIRES_SECS,
    };
    serde_wasm_bindgen::to_value(&format).unwrap_or(JsValue::NULL)
}
