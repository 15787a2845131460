//! Requests as data: the signed GET / conditional PUT / DELETE of one object key in one bucket, and the
//! ListObjectsV2 GET of one page of keys, path-style or virtual-hosted. Builds and signs; never sends
//! (that is the `Env`'s job).

use crate::env::HttpRequest;
use crate::error::{Error, Result};
use crate::s3::CasGuard;
use crate::sigv4::{shown_url, split_once_str, AmzDate, Credentials, Payload, SignInput, Signer};

/// Where the bucket lives and how to sign for it.
pub struct Bucket {
    /// `scheme://host[:port]` for path-style, `scheme://bucket.host[:port]` for virtual-hosted.
    origin: String,
    /// Path before the key: `/<base>/<bucket>/` path-style, `/<base>/` virtual-hosted.
    key_base: String,
    /// Path of the bucket itself (what a listing GETs): `/<base>/<bucket>` path-style, as SDKs send it.
    list_path: String,
    region: String,
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    signer: Signer,
    /// Tigris: every request asks for global strong consistency (`X-Tigris-Consistent: true`); a Global
    /// bucket is otherwise only eventually consistent across regions, and a conditional write checked
    /// against another region's stale copy could let two owners win.
    tigris: bool,
    /// A Workers R2 binding's bucket (`Bucket::binding`): requests go unsigned to `s3::r2::ORIGIN`.
    binding: bool,
}

/// Tigris's endpoints (`t3.storage.dev`, formerly `fly.storage.tigris.dev`), bucket subdomains included.
fn is_tigris(host: &str) -> bool {
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name).to_ascii_lowercase();
    ["storage.dev", "tigris.dev"].iter().any(|domain| name == *domain || name.ends_with(&format!(".{domain}")))
}

/// Bucket names as S3 allows them (3..=63 of `a-z 0-9 . -`); MinIO/R2 accept the same set.
fn check_bucket(bucket: &str) -> Result<()> {
    let ok = (3..=63).contains(&bucket.len())
        && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_value("bucket name ", bucket, " is not a valid S3 bucket name"))
    }
}

/// The keys a bucket signs with: static ones, or none until a credentials provider's arrive.
type Keys<'a> = Option<(&'a str, &'a str, Option<&'a str>)>;

impl Bucket {
    pub fn new(
        endpoint: &str,
        bucket: &str,
        region: &str,
        path_style: bool,
        access_key_id: &str,
        secret_access_key: &str,
        session_token: Option<&str>,
    ) -> Result<Self> {
        Bucket::with_keys(endpoint, bucket, region, path_style, Some((access_key_id, secret_access_key, session_token)))
    }

    /// A bucket without keys yet: a credentials provider's (`set_credentials`) must arrive before anything
    /// is signed (`ownership::credentials::Rotation` sees to it).
    pub fn awaiting_credentials(endpoint: &str, bucket: &str, region: &str, path_style: bool) -> Result<Self> {
        Bucket::with_keys(endpoint, bucket, region, path_style, None)
    }

    fn with_keys(endpoint: &str, bucket: &str, region: &str, path_style: bool, keys: Keys<'_>) -> Result<Self> {
        check_bucket(bucket)?;
        if region.is_empty() || !region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(Error::invalid_value("region ", region, " is not a region name"));
        }
        let (access_key_id, secret_access_key, session_token) = keys.unwrap_or_default();
        if keys.is_some() && (access_key_id.is_empty() || secret_access_key.is_empty()) {
            return Err(Error::invalid("accessKeyId and secretAccessKey must be non-empty"));
        }
        // Messages show the endpoint without userinfo or query (a password, a token), whichever check fails.
        let shown = shown_url(endpoint);
        let (scheme, rest) = split_once_str(endpoint, "://")
            .filter(|(s, _)| *s == "http" || *s == "https")
            .ok_or_else(|| Error::invalid_value("endpoint ", &shown, " must start with http:// or https://"))?;
        if rest.contains(['?', '#', '@']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::invalid_value("endpoint ", &shown, " must be a plain origin with an optional path (no user:password@, query or fragment)"));
        }
        // `split_at_checked`, not slicing: the same split without a panic path (and its formatting code)
        // in the wasm.
        let (host, base) = match rest.find('/').and_then(|i| rest.split_at_checked(i)) {
            Some((host, path)) => (host, path.trim_end_matches('/')),
            None => (rest, ""),
        };
        if host.is_empty() {
            return Err(Error::invalid_value("endpoint ", endpoint, " has no host"));
        }
        // An endpoint that already names the bucket would put every key inside the bucket under a folder
        // of the bucket's name (or address `bucket.bucket.host`): a silent wrong layout, so refuse it.
        let named_in_path = base.rsplit('/').next() == Some(bucket);
        let named_in_host = host.split('.').next() == Some(bucket) && host.len() > bucket.len();
        if named_in_path || (named_in_host && !path_style) {
            return Err(Error::invalid(format!("endpoint {endpoint} already names bucket {bucket}: give the store's endpoint without the bucket, and the bucket as `bucket`")));
        }
        let (origin, key_base, list_path) = if path_style {
            (format!("{scheme}://{host}"), format!("{base}/{bucket}/"), format!("{base}/{bucket}"))
        } else {
            (format!("{scheme}://{bucket}.{host}"), format!("{base}/"), format!("{base}/"))
        };
        Ok(Bucket {
            origin,
            key_base,
            list_path,
            region: region.to_owned(),
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            session_token: session_token.map(str::to_owned),
            signer: Signer::new(),
            tigris: is_tigris(host),
            binding: false,
        })
    }

    /// The bucket of a Workers R2 binding: the same requests as data, unsigned (the binding needs no
    /// keys), addressed to `s3::r2::ORIGIN` for the binding transport to map (`s3::r2::call`).
    pub fn binding() -> Self {
        Bucket {
            origin: crate::s3::r2::ORIGIN.to_owned(),
            key_base: "/".to_owned(),
            list_path: "/".to_owned(),
            region: String::new(),
            access_key_id: String::new(),
            secret_access_key: String::new(),
            session_token: None,
            signer: Signer::new(),
            tigris: false,
            binding: true,
        }
    }

    /// Signs from now on with these keys (a credentials provider's fresh ones).
    pub fn set_credentials(&mut self, access_key_id: &str, secret_access_key: &str, session_token: Option<&str>) -> Result<()> {
        if access_key_id.is_empty() || secret_access_key.is_empty() {
            return Err(Error::invalid("accessKeyId and secretAccessKey must be non-empty"));
        }
        access_key_id.clone_into(&mut self.access_key_id);
        secret_access_key.clone_into(&mut self.secret_access_key);
        self.session_token = session_token.filter(|t| !t.is_empty()).map(str::to_owned);
        Ok(())
    }

    /// The URL of `key` (prefix included), each segment percent-encoded exactly once.
    pub fn url(&self, key: &str) -> String {
        let mut url = String::with_capacity(self.origin.len() + self.key_base.len() + key.len() * 3);
        url.push_str(&self.origin);
        url.push_str(&self.key_base);
        crate::sigv4::encode::push_encoded(&mut url, key.as_bytes(), true);
        url
    }

    fn build(&mut self, method: &'static str, key: &str, headers: Vec<(String, String)>, body: Vec<u8>, now_ms: u64) -> Result<HttpRequest> {
        let url = self.url(key);
        self.sign(method, url, headers, body, now_ms)
    }

    fn sign(&mut self, method: &'static str, url: String, mut headers: Vec<(String, String)>, body: Vec<u8>, now_ms: u64) -> Result<HttpRequest> {
        if self.binding {
            return Ok(HttpRequest { method, url, headers, body });
        }
        if self.tigris {
            headers.push(("x-tigris-consistent".to_owned(), "true".to_owned()));
        }
        let credentials = Credentials {
            access_key_id: &self.access_key_id,
            secret_access_key: &self.secret_access_key,
            session_token: self.session_token.as_deref(),
        };
        let datetime = AmzDate::from_unix_ms(now_ms);
        let signed = self.signer.sign(&SignInput {
            method,
            url: &url,
            headers: &headers,
            payload: Payload::Bytes(&body),
            region: &self.region,
            service: "s3",
            credentials: &credentials,
            datetime: &datetime,
        })?;
        Ok(HttpRequest { method, url: signed.url, headers: signed.headers, body })
    }

    /// ListObjectsV2: one page (at most `max_keys`, default and cap 1000) of the keys that start with
    /// `prefix` (a full key prefix), after `continuation_token` (the previous page's
    /// `NextContinuationToken`, sent back exactly). Each value is percent-encoded once, and signed as sent.
    /// Keys come URL-encoded (`s3::list` decodes them); keys that hold `delimiter` past the prefix are
    /// rolled up into one common prefix each, when given.
    pub fn list(&mut self, prefix: &str, delimiter: Option<&str>, continuation_token: Option<&str>, max_keys: Option<u32>, now_ms: u64) -> Result<HttpRequest> {
        use crate::sigv4::encode::push_encoded;
        let mut url = format!("{}{}?list-type=2&encoding-type=url&prefix=", self.origin, self.list_path);
        push_encoded(&mut url, prefix.as_bytes(), false);
        if let Some(delimiter) = delimiter {
            url.push_str("&delimiter=");
            push_encoded(&mut url, delimiter.as_bytes(), false);
        }
        if let Some(token) = continuation_token {
            url.push_str("&continuation-token=");
            push_encoded(&mut url, token.as_bytes(), false);
        }
        if let Some(n) = max_keys {
            url.push_str(&format!("&max-keys={n}"));
        }
        self.sign("GET", url, Vec::new(), Vec::new(), now_ms)
    }

    pub fn get(&mut self, key: &str, now_ms: u64) -> Result<HttpRequest> {
        self.build("GET", key, Vec::new(), Vec::new(), now_ms)
    }

    /// A conditional PUT of a JSON record.
    pub fn put(&mut self, key: &str, guard: &CasGuard, body: Vec<u8>, now_ms: u64) -> Result<HttpRequest> {
        let condition = match guard {
            CasGuard::Absent => ("if-none-match".to_owned(), "*".to_owned()),
            CasGuard::Match(etag) => ("if-match".to_owned(), etag.clone()),
        };
        let headers = vec![("content-type".to_owned(), "application/json".to_owned()), condition];
        self.build("PUT", key, headers, body, now_ms)
    }

    /// A DELETE, conditional when `guard` is given (the probe cleans up with it).
    pub fn delete(&mut self, key: &str, guard: Option<&CasGuard>, now_ms: u64) -> Result<HttpRequest> {
        let headers = match guard {
            Some(CasGuard::Match(etag)) => vec![("if-match".to_owned(), etag.clone())],
            _ => Vec::new(),
        };
        self.build("DELETE", key, headers, Vec::new(), now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(endpoint: &str, path_style: bool) -> Result<Bucket> {
        Bucket::new(endpoint, "cells", "auto", path_style, "AKID", "secret", None)
    }

    #[test]
    fn a_refused_endpoint_never_shows_its_password_or_query() {
        for endpoint in [
            "ftp://user:hunter2@h?X-Amz-Security-Token=tok3n",
            "user:hunter2@h/?tok3n",
            "https://user:hunter2@h/\u{1b}]52;c;eA==\u{7}?tok3n",
            "https://user:hunter2@h/?tok3n",
        ] {
            let err = bucket(endpoint, true).err().expect(endpoint);
            assert_eq!(err.code(), "invalid-input", "{endpoint}");
            let shown = err.message();
            assert!(!shown.contains("hunter2") && !shown.contains("tok3n") && !shown.contains('\u{1b}'), "{endpoint}: {shown}");
        }
    }

    #[test]
    fn an_endpoint_that_names_the_bucket_is_refused() {
        for (endpoint, path_style) in [
            ("https://acct.r2.cloudflarestorage.com/cells", true),
            ("https://acct.r2.cloudflarestorage.com/cells/", true),
            ("https://proxy.example/s3/cells", true),
            ("https://cells.s3.us-east-1.amazonaws.com", false),
        ] {
            let err = bucket(endpoint, path_style).err().expect(endpoint);
            assert_eq!(err.code(), "invalid-input", "{endpoint}");
            assert!(err.message().contains("already names bucket cells"), "{endpoint}: {}", err.message());
        }
    }

    #[test]
    fn endpoints_with_a_base_path_or_a_similar_name_are_kept() {
        let cases = [
            ("https://acct.r2.cloudflarestorage.com", true, "https://acct.r2.cloudflarestorage.com/cells/k"),
            ("https://proxy.example/s3/", true, "https://proxy.example/s3/cells/k"),
            ("https://proxy.example/cellsx", true, "https://proxy.example/cellsx/cells/k"),
            ("https://s3.us-east-1.amazonaws.com", false, "https://cells.s3.us-east-1.amazonaws.com/k"),
            ("http://cells:9000", true, "http://cells:9000/cells/k"),
        ];
        for (endpoint, path_style, url) in cases {
            assert_eq!(bucket(endpoint, path_style).expect(endpoint).url("k"), url);
        }
    }

    fn example(endpoint: &str, path_style: bool) -> Bucket {
        Bucket::new(endpoint, "bkt", "us-east-1", path_style, "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None)
            .unwrap()
    }

    #[test]
    fn tigris_requests_ask_for_global_consistency_signed_and_no_one_elses_do() {
        let now = 1_796_119_657_000;
        for (endpoint, path_style) in [("https://t3.storage.dev", true), ("https://fly.storage.tigris.dev", false), ("https://T3.Storage.dev:443", true)] {
            let mut b = example(endpoint, path_style);
            for req in [
                b.get("k", now).unwrap(),
                b.put("k", &CasGuard::Absent, b"{}".to_vec(), now).unwrap(),
                b.delete("k", None, now).unwrap(),
                b.list("", None, None, None, now).unwrap(),
            ] {
                assert_eq!(req.header("x-tigris-consistent"), Some("true"), "{endpoint} {}", req.method);
                assert!(req.header("authorization").unwrap().contains("x-tigris-consistent"), "signed: {endpoint}");
            }
        }
        for endpoint in ["https://acct.r2.cloudflarestorage.com", "https://s3.us-east-1.amazonaws.com", "https://storage.dev.example.com", "https://notstorage.dev"] {
            let req = example(endpoint, true).get("k", now).unwrap();
            assert_eq!(req.header("x-tigris-consistent"), None, "{endpoint}");
        }
    }

    #[test]
    fn list_requests_encode_each_value_once() {
        let now = 1_796_119_657_000; // 2026-12-01T10:07:37Z
        let mut b = example("http://127.0.0.1:9000", true);
        let req = b.list("p/cells/", Some("/data/"), Some("1ue/Gc+x=="), Some(2), now).unwrap();
        assert_eq!(req.method, "GET");
        assert_eq!(
            req.url,
            "http://127.0.0.1:9000/bkt?list-type=2&encoding-type=url&prefix=p%2Fcells%2F&delimiter=%2Fdata%2F&continuation-token=1ue%2FGc%2Bx%3D%3D&max-keys=2"
        );
        // The signature over the canonical (sorted) query, from an independent implementation (Python's
        // hashlib/hmac following the SigV4 steps by hand).
        let auth = req.header("authorization").unwrap();
        assert!(auth.ends_with("Signature=6a995b4eefb3c7b89730e7ed314c495ac28938d0cfce814d6c54aba8d53c3449"), "{auth}");
        let first = example("https://s3.example.com/base/", true).list("", None, None, None, now).unwrap();
        assert_eq!(first.url, "https://s3.example.com/base/bkt?list-type=2&encoding-type=url&prefix=");
        let hosted = example("https://s3.example.com", false).list("a b/", None, None, None, now).unwrap();
        assert_eq!(hosted.url, "https://bkt.s3.example.com/?list-type=2&encoding-type=url&prefix=a%20b%2F");
    }
}
