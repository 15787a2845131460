//! AWS Signature Version 4, pure Rust (sha2 + hmac + hex). No I/O, no clock: the caller passes the time.
//! INTERFACE STUB — being implemented; keep these names and shapes.

use crate::error::Result;

/// `YYYYMMDDTHHMMSSZ`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmzDate(String);

impl AmzDate {
    /// Parses `20150830T123600Z`; anything else is `invalid-input`.
    pub fn parse(s: &str) -> Result<Self> {
        todo!("{s}")
    }
    /// From Unix milliseconds (what `Date.now()` gives).
    pub fn from_unix_ms(ms: u64) -> Self {
        todo!("{ms}")
    }
}

pub struct Credentials<'a> {
    pub access_key_id: &'a str,
    pub secret_access_key: &'a str,
    pub session_token: Option<&'a str>,
}

pub enum Payload<'a> {
    Bytes(&'a [u8]),
    Unsigned,
}

pub struct SignInput<'a> {
    pub method: &'a str,
    /// Absolute http(s) URL. For service "s3" each path segment is decoded then encoded exactly once.
    pub url: &'a str,
    /// Header names in any case; all are signed except hop-by-hop/rewritten ones.
    pub headers: &'a [(String, String)],
    pub payload: Payload<'a>,
    pub region: &'a str,
    pub service: &'a str,
    pub credentials: &'a Credentials<'a>,
    pub datetime: &'a AmzDate,
}

/// What to send: the URL (path canonically encoded) and headers with lower-case names
/// (the caller's, plus authorization, x-amz-date, x-amz-content-sha256 for s3, x-amz-security-token).
/// `host` is signed but not included: the fetch sets it from the URL.
pub struct Signed {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// A presigned URL request (query-string auth, `UNSIGNED-PAYLOAD`); `expires_in` is 1..=604800 seconds.
pub struct PresignInput<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    pub credentials: &'a Credentials<'a>,
    pub datetime: &'a AmzDate,
    pub expires_in: u64,
    pub signed_headers: &'a [(String, String)],
}

/// Holds the derived signing key cache, keyed by (secret, date, region, service).
#[derive(Default)]
pub struct Signer {}

impl Signer {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn sign(&mut self, input: &SignInput<'_>) -> Result<Signed> {
        let _ = input;
        todo!()
    }
    pub fn presign(&mut self, input: &PresignInput<'_>) -> Result<String> {
        let _ = input;
        todo!()
    }
}
