//! AWS Signature Version 4, pure Rust (sha2 + hmac + hex). No I/O, no clock: the caller passes the time.
//!
//! Two ways to sign: [`Signer::sign`] (the `Authorization` header) and [`Signer::presign`] (a URL with
//! query authentication). The algorithm's steps live one per file: `url` (parse), `path`, `query` and
//! `headers` (canonical parts), `canonical` (canonical request, string to sign, signature), `key` (derived
//! key cache), `date`, `check` (scalar validation), `presign`. `encode` holds the URI encoding they share.
//!
//! Service `"s3"` follows S3's rules (path segments encoded exactly once, never normalized, payload hash
//! always sent as `x-amz-content-sha256`); any other service follows the generic rules of AWS's published
//! test suite (path normalized, then encoded once more). Bad input is `invalid-input`, never a panic.

mod canonical;
mod check;
mod date;
pub(crate) mod encode;
mod headers;
mod key;
mod path;
mod presign;
mod query;
mod url;

pub use date::AmzDate;
pub(crate) use url::shown as shown_url;
// The component sends what it signed: its request goes to the authority `host` was signed as.
#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
pub(crate) use url::parse as parse_url;
pub use presign::{PresignInput, MAX_EXPIRES_SECS};

use canonical::{Parts, UNSIGNED_PAYLOAD};
use headers::Headers;

use crate::error::{Error, Result};

pub struct Credentials<'a> {
    pub access_key_id: &'a str,
    pub secret_access_key: &'a str,
    /// Sent (and signed) as `x-amz-security-token` / `X-Amz-Security-Token`.
    pub session_token: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// The body; its SHA-256 is signed.
    Bytes(&'a [u8]),
    /// `UNSIGNED-PAYLOAD`: the body is not covered by the signature.
    Unsigned,
    /// A precomputed lower-case hex SHA-256 of the body, or a special value such as
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`, signed as given.
    Hash(&'a str),
    /// The body's lower-case hex SHA-256, computed by the caller (a body hashed in pieces): signed
    /// exactly as `Bytes` of that body would be (no `x-amz-content-sha256` header but for S3).
    BodyHash(&'a str),
}

pub struct SignInput<'a> {
    pub method: &'a str,
    /// Absolute http(s) URL. For service "s3" each path segment is decoded then encoded exactly once.
    /// For other services the path is signed as given (it should be in its wire form, percent-encoded),
    /// normalized and encoded once more, as AWS's test suite defines.
    pub url: &'a str,
    /// Header names in any case; all are signed except hop-by-hop/rewritten ones (`user-agent`,
    /// `content-length`, `expect`, `connection`, `keep-alive`, `proxy-*`, `transfer-encoding`, `te`,
    /// `trailer`, `upgrade`, `x-amzn-trace-id`), which are returned unsigned. `host`, `authorization`,
    /// `x-amz-date` and `x-amz-security-token` are the signer's and are refused. A caller's
    /// `x-amz-content-sha256` is signed as given and used as the payload hash (the payload is then not
    /// hashed), as AWS and botocore do.
    pub headers: &'a [(String, String)],
    pub payload: Payload<'a>,
    pub region: &'a str,
    pub service: &'a str,
    pub credentials: &'a Credentials<'a>,
    pub datetime: &'a AmzDate,
}

/// What to send: the URL (path canonically encoded) and headers with lower-case names
/// (the caller's, plus authorization, x-amz-date, x-amz-content-sha256 for s3, x-amz-security-token).
/// `host` is signed but not included: the fetch sets it from the URL. Signed headers are returned with
/// the values that were signed (trimmed, repeats joined with `,`), so no runtime can join them otherwise.
pub struct Signed {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// What [`Signed`] holds, borrowed from the `Signer`'s buffers (valid until its next call), so a caller
/// that only copies it out (the JS binding) pays no allocation for it. `Signed::headers` is `signed`,
/// then `unsigned`, then `("authorization", authorization)`.
pub struct SignedRef<'s> {
    pub url: &'s str,
    pub signed: &'s [(String, String)],
    pub unsigned: &'s [(String, String)],
    pub authorization: &'s str,
}

/// Holds the derived signing key cache, keyed by (secret, date, region, service), and the buffers of the
/// last canonical request and string to sign (reused between calls, and readable for debugging), plus
/// scratch buffers for everything a signature is built from and made of (reused to save allocations).
#[derive(Default)]
pub struct Signer {
    keys: key::KeyCache,
    request: String,
    string_to_sign: String,
    path: String,
    names: String,
    headers: Headers,
    payload_hash: String,
    authorization: String,
    url: String,
}

/// Checks shared by `sign` and `presign`.
/// Returns the method as it is sent (`check::method`).
pub(crate) fn check_common<'m>(
    method: &'m str,
    region: &str,
    service: &str,
    credentials: &Credentials<'_>,
) -> Result<&'m str> {
    let method = check::method(method)?;
    check::scope_part("region", region)?;
    check::scope_part("service", service)?;
    check::credentials(credentials)?;
    Ok(method)
}

/// Writes the canonical path into `canonical` (cleared first) and returns the path to send when it differs
/// (S3: never; other services: the wire path is the one given, since the canonical one is encoded once
/// more).
pub(crate) fn paths<'r>(canonical: &mut String, raw: &'r str, s3: bool) -> Result<Option<&'r str>> {
    canonical.clear();
    if s3 {
        // fetch resolves `.` and `..` segments (also written `%2E`, `%2e%2E`...) before sending: the
        // request would reach another key than the one signed.
        if split_ascii(raw, |b| b == b'/').any(|segment| path::dot_segment(segment).is_some()) {
            return Err(Error::invalid(
                "url path has a '.' or '..' segment (or one written %2E), which fetch resolves before sending: an S3 key with such a segment cannot be addressed",
            ));
        }
        path::push_s3(canonical, raw);
        Ok(None)
    } else {
        path::push_generic(canonical, raw);
        Ok(Some(if raw.is_empty() { "/" } else { raw }))
    }
}

/// The caller's `x-amz-content-sha256`, if given: it is the payload hash, as in AWS's and botocore's rules.
pub(crate) fn given_payload_hash(headers: &Headers) -> Result<Option<&str>> {
    let mut given = headers
        .signed
        .iter()
        .filter(|(n, _)| n == "x-amz-content-sha256");
    let Some((_, first)) = given.next() else {
        return Ok(None);
    };
    if given.next().is_some() {
        return Err(Error::invalid(
            "header x-amz-content-sha256 is given more than once",
        ));
    }
    check::payload_hash(first)?;
    Ok(Some(first))
}

/// Writes the canonical request's last line into `out` (cleared first): the caller's
/// `x-amz-content-sha256` if given, else the payload's hash, adding the header when the service needs it.
fn payload_line(out: &mut String, headers: &mut Headers, payload: Payload<'_>, s3: bool) -> Result<()> {
    out.clear();
    if let Some(given) = given_payload_hash(headers)? {
        out.push_str(given);
        return Ok(());
    }
    match payload {
        Payload::Bytes(body) => canonical::push_payload_sha256(out, body),
        Payload::Unsigned => out.push_str(UNSIGNED_PAYLOAD),
        Payload::Hash(hash) | Payload::BodyHash(hash) => {
            check::payload_hash(hash)?;
            out.push_str(hash);
        }
    }
    // S3 always wants it; elsewhere it is needed whenever the value is not the body's SHA-256, or the
    // service would hash the body and disagree.
    if s3 || !matches!(payload, Payload::Bytes(_) | Payload::BodyHash(_)) {
        headers.push_signed("x-amz-content-sha256", out);
    }
    Ok(())
}

/// `scheme://host` plus the path, with room for `extra` more bytes (the query).
pub(crate) fn start_url(url: &url::Url<'_>, path: &str, extra: usize) -> String {
    let mut out = String::with_capacity(url.scheme.len() + 3 + url.host.len() + path.len() + extra);
    push_start(&mut out, url, path);
    out
}

/// Appends `scheme://host` plus the path.
fn push_start(out: &mut String, url: &url::Url<'_>, path: &str) {
    out.push_str(url.scheme);
    out.push_str("://");
    out.push_str(&url.host);
    out.push_str(path);
}

impl Signer {
    pub fn new() -> Self {
        Self::default()
    }

    /// The canonical request of the last signature (empty or partial after an error).
    pub fn canonical_request(&self) -> &str {
        &self.request
    }

    /// The string to sign of the last signature (empty or partial after an error).
    pub fn string_to_sign(&self) -> &str {
        &self.string_to_sign
    }

    /// Signs with an `Authorization` header.
    pub fn sign(&mut self, input: &SignInput<'_>) -> Result<Signed> {
        let signed = self.sign_ref(input)?;
        let mut headers = Vec::with_capacity(signed.signed.len() + signed.unsigned.len() + 1);
        headers.extend_from_slice(signed.signed);
        headers.extend_from_slice(signed.unsigned);
        headers.push(("authorization".to_owned(), signed.authorization.to_owned()));
        Ok(Signed { url: signed.url.to_owned(), headers })
    }

    /// Signs with an `Authorization` header, leaving the result in the signer's buffers.
    pub fn sign_ref(&mut self, input: &SignInput<'_>) -> Result<SignedRef<'_>> {
        let Signer { keys, request, string_to_sign, path, names, headers, payload_hash, authorization, url: out_url } =
            self;
        request.clear();
        string_to_sign.clear();
        let method = check_common(input.method, input.region, input.service, input.credentials)?;
        let url = url::parse(input.url)?;
        let s3 = input.service == "s3";
        headers.fill(input.headers)?;

        payload_line(payload_hash, headers, input.payload, s3)?;
        headers.push_signed("x-amz-date", input.datetime.as_str());
        if let Some(token) = input.credentials.session_token {
            headers.push_signed("x-amz-security-token", token);
        }
        headers.finish();

        let wire_path = paths(path, url.path, s3)?;
        let params = query::parse(url.query);
        names.clear();
        headers.push_names(names, &url.host);
        canonical::write_request(
            request,
            &Parts {
                method,
                path,
                params: &params,
                headers,
                host: &url.host,
                signed_names: names,
                payload_hash,
            },
        );

        let creds = input.credentials;
        let datetime = input.datetime;
        let entry = keys.get(
            creds.secret_access_key,
            datetime.date(),
            input.region,
            input.service,
        )?;
        canonical::write_string_to_sign(string_to_sign, datetime.as_str(), &entry.scope, request);

        authorization.clear();
        authorization.push_str(canonical::ALGORITHM);
        authorization.push_str(" Credential=");
        authorization.push_str(creds.access_key_id);
        authorization.push('/');
        authorization.push_str(&entry.scope);
        authorization.push_str(", SignedHeaders=");
        authorization.push_str(names);
        authorization.push_str(", Signature=");
        canonical::push_signature(authorization, &entry.mac, string_to_sign);

        out_url.clear();
        push_start(out_url, &url, wire_path.unwrap_or(path));
        if !params.is_empty() {
            out_url.push('?');
            query::push_wire(out_url, &params);
        }
        Ok(SignedRef { url: out_url, signed: &headers.signed, unsigned: &headers.unsigned, authorization })
    }
}

/// Stable sort for the handful of headers and query parameters a request carries: binary insertion
/// (O(n log n) comparisons, in-place moves). `slice::sort*` would bring ~15 KB of sorting networks to wasm.
pub(crate) fn sort_small<T>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    for i in 1..v.len() {
        // After every element not greater than v[i]: equal elements keep their order.
        let pos = v[..i].partition_point(|x| !less(&v[i], x));
        for j in (pos..i).rev() {
            v.swap(j, j + 1);
        }
    }
}

/// Whether every byte of `s` passes `f`. A plain loop: at opt-level "z" the iterator adapters
/// (`bytes().all(..)` and kin) stay out-of-line `try_fold` calls, measurably slower on the signing path.
#[inline]
pub(crate) fn all_bytes(s: &str, f: impl Fn(u8) -> bool) -> bool {
    for &b in s.as_bytes() {
        if !f(b) {
            return false;
        }
    }
    true
}

/// Index of the first byte of `s` that passes `f` (a plain loop, as `all_bytes`).
#[inline]
pub(crate) fn find_byte(s: &[u8], f: impl Fn(u8) -> bool) -> Option<usize> {
    for (i, &b) in s.iter().enumerate() {
        if f(b) {
            return Some(i);
        }
    }
    None
}

/// Appends `n` in decimal, as `{}` prints it. By hand rather than through `format!`/`to_string`, whose
/// machinery the signing-only wasm would otherwise carry for these few numbers (a port, an IPv4 octet,
/// `X-Amz-Expires`).
pub(crate) fn push_decimal(out: &mut String, n: u64) {
    // The largest power of ten not above n, then each digit from the most significant one.
    let mut unit = 1;
    while n / unit >= 10 {
        unit *= 10;
    }
    loop {
        out.push(char::from(b'0' + (n / unit % 10) as u8));
        if unit == 1 {
            break;
        }
        unit /= 10;
    }
}

/// `s.split(c)` for ASCII separators (`is_sep` says which bytes), by byte search: a `char` pattern is a
/// per-character searcher, slower at opt-level "z" and core's largest piece of string code in the
/// signing-only wasm. An ASCII byte is a whole character, so every piece starts and ends on character
/// boundaries (`get` never says `None` here, and brings no panic path).
pub(crate) fn split_ascii<F: Fn(u8) -> bool>(s: &str, is_sep: F) -> SplitAscii<'_, F> {
    SplitAscii { rest: Some(s), is_sep }
}

pub(crate) struct SplitAscii<'a, F> {
    /// What is left to split; `None` once the last piece was given.
    rest: Option<&'a str>,
    is_sep: F,
}

impl<'a, F: Fn(u8) -> bool> Iterator for SplitAscii<'a, F> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match find_byte(rest.as_bytes(), &self.is_sep) {
            Some(at) => {
                self.rest = rest.get(at + 1..);
                rest.get(..at)
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// `s.split_once(ascii)` by byte search (see `split_ascii`).
pub(crate) fn split_once_byte(s: &str, ascii: u8) -> Option<(&str, &str)> {
    let at = find_byte(s.as_bytes(), |b| b == ascii)?;
    Some((s.get(..at)?, s.get(at + 1..)?))
}

/// `hay.split_once(needle)` by plain byte comparison: `str` patterns would bring the Two-Way searcher
/// (~2.5 KB of wasm) for the few short, fixed needles the crate looks for.
pub(crate) fn split_once_str<'a>(hay: &'a str, needle: &str) -> Option<(&'a str, &'a str)> {
    if needle.is_empty() {
        return Some(("", hay)); // as `str::split_once`; `windows(0)` would panic
    }
    let at = hay.as_bytes().windows(needle.len()).position(|w| w == needle.as_bytes())?;
    // `needle` is a whole str, so a match starts and ends on character boundaries: `get` never says
    // `None` here, and unlike slicing it brings no panic path (and its formatting code) into the wasm.
    Some((hay.get(..at)?, hay.get(at + needle.len()..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_signer_signs_as_a_fresh_one() {
        // The signer refills its header pairs and buffers on every call: nothing of a previous request
        // (more headers, an unsigned one, a token, a query, repeats) may leak into the next.
        let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
        };
        let requests = [
            ("PUT", "https://b.s3.amazonaws.com/k?x=1&y", h(&[("Content-Type", "a/b"), ("if-match", " \"e\" "), ("User-Agent", "u"), ("x-a", "1"), ("X-A", "2")]), Some("tok")),
            ("GET", "https://b.s3.amazonaws.com/k", h(&[]), None),
            ("DELETE", "http://h:9000/b/k%20x", h(&[("range", "bytes=0-1")]), None),
            ("PUT", "https://b.s3.amazonaws.com/k", h(&[("x-amz-content-sha256", "UNSIGNED-PAYLOAD"), ("content-length", "3")]), Some("t2")),
        ];
        let datetime = AmzDate::parse("20150830T123600Z").unwrap();
        let mut reused = Signer::new();
        for round in 0..2 {
            for (i, (method, url, headers, token)) in requests.iter().enumerate() {
                let credentials = Credentials { access_key_id: "AKID", secret_access_key: "secret", session_token: *token };
                let input = SignInput {
                    method,
                    url,
                    headers,
                    payload: Payload::Bytes(b"body"),
                    region: "us-east-1",
                    service: if i == 2 { "iam" } else { "s3" },
                    credentials: &credentials,
                    datetime: &datetime,
                };
                let got = reused.sign(&input).unwrap();
                let want = Signer::new().sign(&input).unwrap();
                assert_eq!((got.url, got.headers), (want.url, want.headers), "request {i}, round {round}");
            }
        }
    }

    #[test]
    fn a_body_hashed_by_the_caller_signs_as_the_body() {
        let datetime = AmzDate::parse("20150830T123600Z").unwrap();
        let credentials = Credentials { access_key_id: "AKID", secret_access_key: "secret", session_token: None };
        let body = b"a body hashed in pieces";
        let hex = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body));
        for service in ["s3", "execute-api"] {
            let sign = |payload| {
                let input = SignInput { method: "POST", url: "https://h/a", headers: &[], payload, region: "us-east-1", service, credentials: &credentials, datetime: &datetime };
                let signed = Signer::new().sign(&input).unwrap();
                (signed.url, signed.headers)
            };
            assert_eq!(sign(Payload::BodyHash(&hex)), sign(Payload::Bytes(body)), "{service}");
        }
    }

    #[test]
    fn push_decimal_writes_what_display_writes() {
        for n in [0, 1, 9, 10, 99, 255, 443, 65_535, 604_800, 1 << 32, u64::MAX - 1, u64::MAX] {
            let mut out = String::from("x");
            super::push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
    }

    #[test]
    fn split_ascii_and_split_once_byte_match_str_split() {
        for s in ["", "/", "a", "/a/b", "a//b/", "ü/é//", "&a=1&&b", "a=b=c", "x y\tz  "] {
            for sep in [b'/', b'&', b'=', b' '] {
                let got: Vec<&str> = super::split_ascii(s, |b| b == sep).collect();
                assert_eq!(got, s.split(char::from(sep)).collect::<Vec<_>>(), "{s:?} {sep}");
                assert_eq!(super::split_once_byte(s, sep), s.split_once(char::from(sep)), "{s:?} {sep}");
            }
            let got: Vec<&str> = super::split_ascii(s, |b| b == b' ' || b == b'\t').collect();
            assert_eq!(got, s.split([' ', '\t']).collect::<Vec<_>>(), "{s:?}");
        }
    }

    #[test]
    fn split_once_str_matches_str_split_once() {
        for (hay, needle) in [("https://h/p", "://"), ("a://b://c", "://"), ("x", "://"), ("", "ab"), ("é<a>é", "<a>"), ("ab", "ab"), ("ab", "")] {
            assert_eq!(super::split_once_str(hay, needle), hay.split_once(needle), "{hay:?} {needle:?}");
        }
    }

    #[test]
    fn sort_small_is_a_stable_sort() {
        let mut seed = 7u32;
        for len in 0..40 {
            let mut v: Vec<(u32, usize)> = (0..len)
                .map(|i| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    ((seed >> 16) % 5, i)
                })
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|p| p.0);
            super::sort_small(&mut v, |a, b| a.0 < b.0);
            assert_eq!(v, want);
        }
    }
}
