//! The Rust tests that run compiled to wasm, shared by the two test crates that include this module:
//! `tests/browser.rs` (headless Chromium, `wasm-pack test --headless --chrome`) and `tests/wasm_node.rs`
//! (Node, `wasm-pack test --node`). AWS's vectors, then requests signed in wasm and sent with the runtime's
//! own `fetch` to the strict servers that scripts/test starts (moto in auth mode for header auth, s3s-fs
//! for presigned URLs); a browser page reaches them through their CORS pass-throughs. Server coordinates
//! are baked in at compile time from the CELLD_TEST_* variables; without them the server tests fail and
//! say so.

use celld_edge::sigv4::{AmzDate, Credentials, Payload, PresignInput, SignInput, Signer};
use js_sys::{Object, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

/// Where the including crate runs: a page must use the CORS pass-throughs, Node reaches servers directly.
#[derive(Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // each including crate names one
pub enum Runtime {
    Chromium,
    Node,
}

impl Runtime {
    fn name(self) -> &'static str {
        match self {
            Runtime::Chromium => "chromium",
            Runtime::Node => "node",
        }
    }
}

use super::RUNTIME;

const SUITE_CREDS: Credentials<'static> = Credentials {
    access_key_id: "AKIDEXAMPLE",
    secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    session_token: None,
};

const STS_TOKEN: &str = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or("")
}

fn suite_sign(method: &str, url: &str, headers: &[(String, String)], body: &[u8], creds: &Credentials<'_>) -> String {
    let datetime = AmzDate::parse("20150830T123600Z").unwrap();
    let input = SignInput {
        method,
        url,
        headers,
        payload: Payload::Bytes(body),
        region: "us-east-1",
        service: "service",
        credentials: creds,
        datetime: &datetime,
    };
    let signed = Signer::new().sign(&input).unwrap();
    header(&signed.headers, "authorization").to_owned()
}

#[wasm_bindgen_test]
fn aws_vectors() {
    let authz = |s: &str| s.trim().to_owned();
    assert_eq!(
        suite_sign("GET", "https://example.amazonaws.com/", &[], b"", &SUITE_CREDS),
        authz(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aws-sig-v4-test-suite/get-vanilla/get-vanilla.authz")))
    );
    assert_eq!(
        suite_sign("GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1", &[], b"", &SUITE_CREDS),
        authz(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/aws-sig-v4-test-suite/get-vanilla-query-order-key-case/get-vanilla-query-order-key-case.authz"
        )))
    );
    let form = [("Content-Type".to_owned(), "application/x-www-form-urlencoded".to_owned())];
    assert_eq!(
        suite_sign("POST", "https://example.amazonaws.com/", &form, b"Param1=value1", &SUITE_CREDS),
        authz(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/aws-sig-v4-test-suite/post-x-www-form-urlencoded/post-x-www-form-urlencoded.authz"
        )))
    );
    let sts = Credentials { session_token: Some(STS_TOKEN), ..SUITE_CREDS };
    assert_eq!(
        suite_sign("POST", "https://example.amazonaws.com/", &[], b"", &sts),
        authz(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/aws-sig-v4-test-suite/post-sts-token/post-sts-header-before/post-sts-header-before.authz"
        )))
    );
}

const S3_CREDS: Credentials<'static> = Credentials {
    access_key_id: "AKIAIOSFODNN7EXAMPLE",
    secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    session_token: None,
};

#[wasm_bindgen_test]
fn s3_examples() {
    let datetime = AmzDate::parse("20130524T000000Z").unwrap();
    let mut signer = Signer::new();
    let get = signer
        .sign(&SignInput {
            method: "GET",
            url: "https://examplebucket.s3.amazonaws.com/test.txt",
            headers: &[("Range".to_owned(), "bytes=0-9".to_owned())],
            payload: Payload::Bytes(b""),
            region: "us-east-1",
            service: "s3",
            credentials: &S3_CREDS,
            datetime: &datetime,
        })
        .unwrap();
    assert!(header(&get.headers, "authorization")
        .ends_with("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"));
    let put = signer
        .sign(&SignInput {
            method: "PUT",
            url: "https://examplebucket.s3.amazonaws.com/test$file.text",
            headers: &[
                ("Date".to_owned(), "Fri, 24 May 2013 00:00:00 GMT".to_owned()),
                ("x-amz-storage-class".to_owned(), "REDUCED_REDUNDANCY".to_owned()),
            ],
            payload: Payload::Bytes(b"Welcome to Amazon S3."),
            region: "us-east-1",
            service: "s3",
            credentials: &S3_CREDS,
            datetime: &datetime,
        })
        .unwrap();
    assert!(header(&put.headers, "authorization")
        .ends_with("Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"));
    let url = signer
        .presign(&PresignInput {
            method: "GET",
            url: "https://examplebucket.s3.amazonaws.com/test.txt",
            region: "us-east-1",
            service: "s3",
            credentials: &S3_CREDS,
            datetime: &datetime,
            expires_in: 86400,
            signed_headers: &[],
        })
        .unwrap();
    assert!(url.ends_with("X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"), "{url}");
}

#[wasm_bindgen_test]
fn bad_input_is_invalid_input_and_the_signer_keeps_working() {
    let datetime = AmzDate::parse("20130524T000000Z").unwrap();
    let mut signer = Signer::new();
    let sign = |signer: &mut Signer, url: &str, creds: &Credentials<'_>| {
        signer.sign(&SignInput {
            method: "GET",
            url,
            headers: &[],
            payload: Payload::Bytes(b""),
            region: "us-east-1",
            service: "s3",
            credentials: creds,
            datetime: &datetime,
        })
    };
    let empty = Credentials { access_key_id: "", ..S3_CREDS };
    for (url, creds) in [("not a url", &S3_CREDS), ("http://", &S3_CREDS), ("https://example.com/x", &empty)] {
        let err = sign(&mut signer, url, creds).err().expect("bad input must not sign");
        assert_eq!(err.code(), "invalid-input", "{url}: {err}");
        assert!(sign(&mut signer, "https://examplebucket.s3.amazonaws.com/test.txt", &S3_CREDS).is_ok());
    }
    for bad in ["2013-05-24T00:00:00Z", "20130524T000000", "20131324T000000Z", ""] {
        assert_eq!(AmzDate::parse(bad).unwrap_err().code(), "invalid-input", "{bad:?}");
    }
}

/// A strict server's coordinates (baked in at compile time): for a page, its CORS pass-through.
struct Server {
    endpoint: &'static str,
    bucket: &'static str,
    key_id: &'static str,
    secret: &'static str,
}

/// `values`: the direct endpoint, the browser endpoint, the bucket, the key id and the secret.
fn server(prefix: &str, values: [Option<&'static str>; 5]) -> Server {
    let [direct, browser, bucket, key_id, secret] = values;
    let missing = || {
        panic!("{prefix}_ENDPOINT/_BROWSER_ENDPOINT/_BUCKET/_KEY_ID/_SECRET were not set when this test was compiled: run scripts/test")
    };
    Server {
        endpoint: if RUNTIME == Runtime::Chromium { browser } else { direct }.unwrap_or_else(missing),
        bucket: bucket.unwrap_or_else(missing),
        key_id: key_id.unwrap_or_else(missing),
        secret: secret.unwrap_or_else(missing),
    }
}

fn moto() -> Server {
    server(
        "CELLD_TEST_STRICT",
        [
            option_env!("CELLD_TEST_STRICT_ENDPOINT"),
            option_env!("CELLD_TEST_STRICT_BROWSER_ENDPOINT"),
            option_env!("CELLD_TEST_STRICT_BUCKET"),
            option_env!("CELLD_TEST_STRICT_KEY_ID"),
            option_env!("CELLD_TEST_STRICT_SECRET"),
        ],
    )
}

fn s3s() -> Server {
    server(
        "CELLD_TEST_PRESIGN",
        [
            option_env!("CELLD_TEST_PRESIGN_ENDPOINT"),
            option_env!("CELLD_TEST_PRESIGN_BROWSER_ENDPOINT"),
            option_env!("CELLD_TEST_PRESIGN_BUCKET"),
            option_env!("CELLD_TEST_PRESIGN_KEY_ID"),
            option_env!("CELLD_TEST_PRESIGN_SECRET"),
        ],
    )
}

/// The runtime's own `fetch`; returns (status, body text).
async fn fetch(method: &str, url: &str, headers: &[(String, String)], body: Option<&str>) -> (u16, String) {
    let init = Object::new();
    let h = Object::new();
    for (name, value) in headers {
        Reflect::set(&h, &name.into(), &value.into()).unwrap();
    }
    Reflect::set(&init, &"method".into(), &method.into()).unwrap();
    Reflect::set(&init, &"headers".into(), &h).unwrap();
    if let Some(body) = body {
        Reflect::set(&init, &"body".into(), &body.into()).unwrap();
    }
    let global = js_sys::global();
    let fetch: js_sys::Function = Reflect::get(&global, &"fetch".into()).unwrap().dyn_into().unwrap();
    let promise: js_sys::Promise = fetch.call2(&global, &url.into(), &init).unwrap().dyn_into().unwrap();
    let response = JsFuture::from(promise).await.unwrap_or_else(|e| panic!("fetch {method} {url}: {e:?}"));
    let status = Reflect::get(&response, &"status".into()).unwrap().as_f64().unwrap() as u16;
    let text: js_sys::Function = Reflect::get(&response, &"text".into()).unwrap().dyn_into().unwrap();
    let text = JsFuture::from(text.call0(&response).unwrap().dyn_into::<js_sys::Promise>().unwrap()).await.unwrap();
    (status, text.as_string().unwrap_or_default())
}

fn now() -> AmzDate {
    AmzDate::from_unix_ms(js_sys::Date::now() as u64)
}

/// A key with spaces, `+`, unicode and a `/`, each segment percent-encoded once.
fn object_url(server: &Server, name: &str) -> (String, String) {
    let key = format!("signing/{} {} {name}/a+b c ünï☃ 日本.txt", RUNTIME.name(), js_sys::Date::now());
    let encoded: Vec<String> =
        key.split('/').map(|s| String::from(js_sys::encode_uri_component(s))).collect();
    (key, format!("{}/{}/{}", server.endpoint, server.bucket, encoded.join("/")))
}

async fn signed(signer: &mut Signer, server: &Server, secret: &str, method: &str, url: &str, headers: &[(String, String)], body: Option<&str>) -> (u16, String) {
    let creds = Credentials { access_key_id: server.key_id, secret_access_key: secret, session_token: None };
    let datetime = now();
    let out = signer
        .sign(&SignInput {
            method,
            url,
            headers,
            payload: Payload::Bytes(body.unwrap_or("").as_bytes()),
            region: "us-east-1",
            service: "s3",
            credentials: &creds,
            datetime: &datetime,
        })
        .unwrap();
    fetch(method, &out.url, &out.headers, body).await
}

/// PUT (If-None-Match), GET, list and a wrong-secret GET against one server; returns the object URL and body.
async fn round_trip(server: &Server, name: &str) -> (String, String) {
    let mut signer = Signer::new();
    let (key, url) = object_url(server, name);
    let body = format!("{{\"runtime\":\"{}\",\"key\":\"{key}\"}}", RUNTIME.name());
    let put_headers = [("content-type".to_owned(), "application/json".to_owned()), ("if-none-match".to_owned(), "*".to_owned())];
    let (status, text) = signed(&mut signer, server, server.secret, "PUT", &url, &put_headers, Some(&body)).await;
    assert_eq!(status, 200, "signed PUT: {text}");
    let (status, text) = signed(&mut signer, server, server.secret, "GET", &url, &[], None).await;
    assert_eq!((status, text.as_str()), (200, body.as_str()), "signed GET");
    let prefix = &key[..key.rfind('/').unwrap() + 1];
    let list = format!(
        "{}/{}?list-type=2&prefix={}",
        server.endpoint,
        server.bucket,
        String::from(js_sys::encode_uri_component(prefix))
    );
    let (status, text) = signed(&mut signer, server, server.secret, "GET", &list, &[], None).await;
    assert_eq!(status, 200, "signed list: {text}");
    assert!(text.contains(&format!("<Key>{key}</Key>")), "stored under another key than {key}: {text}");
    let wrong = format!("{}x", server.secret);
    let (status, text) = signed(&mut signer, server, &wrong, "GET", &url, &[], None).await;
    assert_eq!(status, 403, "GET with a wrong secret: {text}");
    (url, body)
}

#[wasm_bindgen_test]
async fn moto_accepts_what_wasm_signs() {
    round_trip(&moto(), "moto").await;
}

#[wasm_bindgen_test]
async fn s3s_fs_accepts_signed_and_presigned_requests_from_wasm() {
    let server = s3s();
    let (url, body) = round_trip(&server, "s3s").await;
    let mut signer = Signer::new();
    let presign = |signer: &mut Signer, secret: &str| {
        let creds = Credentials { access_key_id: server.key_id, secret_access_key: secret, session_token: None };
        let datetime = now();
        signer
            .presign(&PresignInput {
                method: "GET",
                url: &url,
                region: "us-east-1",
                service: "s3",
                credentials: &creds,
                datetime: &datetime,
                expires_in: 60,
                signed_headers: &[],
            })
            .unwrap()
    };
    let good = presign(&mut signer, server.secret);
    let (status, text) = fetch("GET", &good, &[], None).await;
    assert_eq!((status, text.as_str()), (200, body.as_str()), "presigned GET");
    let bad = presign(&mut signer, "wrong");
    let (status, text) = fetch("GET", &bad, &[], None).await;
    assert_eq!(status, 403, "presigned GET with a wrong secret: {text}");
}
