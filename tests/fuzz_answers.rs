//! Property-based fuzzing (proptest) of everything the network can send us: the S3 answer classifier
//! (status, ETag header, XML error body), the XML error parser, and the record decoders. For every input:
//! no panic (a panic kills the wasm instance), a typed error for what is malformed, and the SPEC §3
//! meaning for what is well formed. The `cargo fuzz` targets under `fuzz/` drive the same functions with
//! coverage guidance; these run on every `cargo test`.
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

use celld_edge::env::{HttpResponse, TransportError};
use celld_edge::ownership::records::{awaits_recovery, decode_lease, decode_nonce, decode_owner, MAX_EPOCH};
use celld_edge::s3::{classify_get, classify_put, parse_error, GetAnswer, PutAnswer};
use proptest::prelude::*;

const KEY: &str = "cells/c/own.json";

/// S3 sends XML or nothing where it sends a body at all: anything else (a page, JSON, text) is some
/// other server's, refused as "not an S3 API". Stated here on its own, not borrowed from the library.
fn s3_shaped(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let t = text.trim_start_matches(|c: char| c.is_ascii_whitespace()).trim_start_matches('\u{feff}').to_ascii_lowercase();
    t.is_empty() || (t.starts_with('<') && !["<!doctype html", "<html", "<head", "<body"].iter().any(|p| t.starts_with(p)))
}

fn is_html(body: &[u8]) -> bool {
    let t = String::from_utf8_lossy(body).trim_start_matches(|c: char| c.is_ascii_whitespace()).to_ascii_lowercase();
    ["<!doctype html", "<html", "<head", "<body"].iter().any(|p| t.starts_with(p))
}

fn says_not_s3(e: &celld_edge::Error) -> bool {
    matches!(e, celld_edge::Error::Request(r) if r.message.starts_with("not an S3 API"))
}

/// Status codes biased toward the ones that mean something, plus anything at all.
fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        prop::sample::select(vec![
            200u16, 201, 204, 206, 299, 304, 400, 401, 403, 404, 409, 412, 429, 500, 501, 503, 599
        ]),
        any::<u16>(),
    ]
}

/// S3-ish error bodies: well-formed XML with arbitrary code/message text, broken XML, or raw bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let code = prop_oneof![
        prop::sample::select(vec![
            "NoSuchKey",
            "PreconditionFailed",
            "ConditionalRequestConflict",
            "OperationAborted",
            "SlowDown",
            "AccessDenied",
            "SignatureDoesNotMatch",
            "InternalError",
            "",
        ])
        .prop_map(str::to_owned),
        ".{0,40}",
    ];
    prop_oneof![
        (code.clone(), ".{0,400}").prop_map(|(c, m)| format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{c}</Code><Message>{m}</Message></Error>"
        )
        .into_bytes()),
        (code, any::<usize>()).prop_map(|(c, cut)| {
            let full = format!("<Error><Code>{c}</Code><Message>m &amp;&lt;&#x;&amp</Message></Error>");
            full.as_bytes()[..cut % (full.len() + 1)].to_vec()
        }),
        "(<Error>|<Code>|</Code>|<Message>|</Message>|&amp;|&lt;|&|<|>|[a-z]{1,5}){0,30}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..512),
    ]
}

fn etag() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![Just(String::new()), "\"[0-9a-f]{32}\"", "W/\"[ -~]{0,20}\"", ".{0,64}"])
}

fn answer() -> impl Strategy<Value = Result<HttpResponse, TransportError>> {
    prop_oneof![
        8 => (status(), etag(), body()).prop_map(|(status, etag, body)| Ok(HttpResponse { status, etag, body, date: None })),
        1 => Just(Err(TransportError::TimedOut)),
        1 => ".{0,80}".prop_map(|m| Err(TransportError::Network(m.into()))),
    ]
}

/// Arbitrary JSON values, nested, to build records around.
fn json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON has no NaN/inf", |f| f.is_finite()).prop_map(Value::from),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Records with each field sometimes right, sometimes of the wrong type, sometimes missing, plus extras.
fn record(fields: &'static [&'static str]) -> impl Strategy<Value = serde_json::Value> {
    let field = prop_oneof![
        2 => Just(None),
        3 => any::<u64>().prop_map(|n| Some(serde_json::Value::from(n % (MAX_EPOCH + 2)))),
        3 => ".{0,12}".prop_map(|s| Some(serde_json::Value::String(s))),
        1 => json().prop_map(Some),
    ];
    (prop::collection::vec(field, fields.len()), prop::collection::btree_map("[a-z_]{1,8}", json(), 0..3)).prop_map(
        move |(values, extra)| {
            let mut obj: serde_json::Map<String, serde_json::Value> = extra.into_iter().collect();
            for (name, v) in fields.iter().zip(values) {
                match v {
                    Some(v) => obj.insert((*name).to_owned(), v),
                    None => obj.remove(*name),
                };
            }
            serde_json::Value::Object(obj)
        },
    )
}

/// Whether celld's decoder (serde, like ours) takes `v` as a folded node log: an object with the fields,
/// or serde's sequence form of the same struct; `null` is no log.
fn log_ok(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    let opt = |v: Option<&Value>, ok: fn(&Value) -> bool| v.is_none_or(|v| v.is_null() || ok(v));
    match v {
        Value::Null => true,
        Value::Object(o) => {
            o.get("state").is_some_and(Value::is_string)
                && o.get("epoch").is_some_and(Value::is_u64)
                && o.get("ensemble").is_some_and(strings)
                && o.get("tiered").is_some_and(Value::is_u64)
                && o.get("active").is_none_or(Value::is_boolean)
                && opt(o.get("claimant"), Value::is_string)
                && opt(o.get("claimed_ms"), Value::is_u64)
        }
        Value::Array(a) => {
            (4..=7).contains(&a.len())
                && a[0].is_string()
                && a[1].is_u64()
                && strings(&a[2])
                && a[3].is_u64()
                && a.get(4).is_none_or(Value::is_boolean)
                && opt(a.get(5), Value::is_string)
                && opt(a.get(6), Value::is_u64)
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn put_answers_classify_as_spec_section_3(answer in answer()) {
        let got = classify_put(KEY, answer.clone());
        let Ok(resp) = answer else {
            prop_assert!(matches!(got, PutAnswer::Ambiguous { .. }), "transport failure must be ambiguous: {got:?}");
            return Ok(());
        };
        let (code, message) = parse_error(&resp.body);
        let has_etag = resp.etag.as_deref().is_some_and(|e| !e.is_empty());
        let shaped = s3_shaped(&resp.body);
        match resp.status {
            200..=299 if !shaped => {
                prop_assert!(matches!(&got, PutAnswer::Refused(e) if says_not_s3(e)), "{:?}", got)
            }
            409 | 501 if !shaped => prop_assert!(matches!(&got, PutAnswer::Refused(e) if says_not_s3(e)), "{:?}", got),
            200..=299 if has_etag => prop_assert_eq!(got, PutAnswer::Applied { etag: resp.etag.clone().unwrap() }),
            200..=299 => prop_assert!(matches!(got, PutAnswer::Ambiguous { .. }), "{:?}", got),
            304 | 412 => prop_assert_eq!(got, PutAnswer::Rejected),
            404 if code == "NoSuchKey" => prop_assert_eq!(got, PutAnswer::Rejected),
            409 if ["", "ConditionalRequestConflict", "OperationAborted"].contains(&code.as_str()) => {
                prop_assert!(matches!(got, PutAnswer::Conflict { .. }), "{:?}", got)
            }
            // 429, and S3's 503 SlowDown: turned away, not applied (SPEC §6, "Under load").
            429 => prop_assert!(matches!(got, PutAnswer::Throttled(_)), "{:?}", got),
            503 if code == "SlowDown" => prop_assert!(matches!(got, PutAnswer::Throttled(_)), "{:?}", got),
            500 | 502..=599 => prop_assert!(matches!(got, PutAnswer::Ambiguous { .. }), "{:?}", got),
            status => match got {
                PutAnswer::Refused(e) if !shaped && status != 401 && status != 403 => {
                    prop_assert!(says_not_s3(&e), "{e:?}")
                }
                PutAnswer::Refused(e) => {
                    prop_assert!(["auth", "request"].contains(&e.code()), "{e:?}");
                    if let celld_edge::Error::Auth(r) | celld_edge::Error::Request(r) = e {
                        // A store's 501 to a conditional write says what it means before the store's words.
                        let said = if status == 501 && !code.is_empty() {
                            format!("the store does not implement conditional writes (If-None-Match / If-Match), which ownership needs: {message}")
                        } else {
                            message
                        };
                        prop_assert_eq!((r.status, r.code, r.message), (status, code, said));
                    }
                }
                other => prop_assert!(false, "status {status} must be refused, got {other:?}"),
            },
        }
    }

    #[test]
    fn get_answers_never_invent_a_record(answer in answer()) {
        let got = classify_get(KEY, answer.clone());
        match (&answer, &got) {
            (Err(_), GetAnswer::Retryable { .. }) => {}
            (Err(_), other) => prop_assert!(false, "transport failure must be retryable: {other:?}"),
            (Ok(resp), GetAnswer::Found { body, etag }) => {
                prop_assert_eq!(resp.status, 200);
                prop_assert_eq!(body, &resp.body);
                prop_assert_eq!(Some(etag), resp.etag.as_ref());
                prop_assert!(!etag.is_empty());
            }
            (Ok(resp), GetAnswer::Missing) => {
                prop_assert_eq!(resp.status, 404);
                prop_assert!(s3_shaped(&resp.body), "a page is not S3's NoSuchKey");
            }
            (Ok(resp), GetAnswer::Retryable { .. }) => {
                prop_assert!(matches!(resp.status, 200 | 429 | 500..=599), "{}", resp.status);
                prop_assert!(!(resp.status == 200 && is_html(&resp.body)), "a page without an ETag is no S3 answer");
            }
            (Ok(_), GetAnswer::Refused(e)) => prop_assert!(["auth", "request"].contains(&e.code())),
        }
    }

    #[test]
    fn error_bodies_parse_to_bounded_text(body in body()) {
        let (code, message) = parse_error(&body);
        prop_assert!(code.chars().count() <= 300 && message.chars().count() <= 300);
    }

    #[test]
    fn well_formed_error_bodies_round_trip(code in "[A-Za-z]{0,30}", message in "[^<&]{0,200}") {
        let body = format!("<Error><Code>{code}</Code><Message>{message}</Message><RequestId>x</RequestId></Error>");
        prop_assert_eq!(parse_error(body.as_bytes()), (code, message));
    }

    #[test]
    fn owner_records_decode_or_are_corrupt(rec in record(&["node", "epoch", "nonce"]), junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let body = serde_json::to_vec(&rec).expect("values serialize");
        let node_ok = rec.get("node").is_some_and(|v| v.is_string());
        let epoch_ok = rec.get("epoch").and_then(|v| v.as_u64()).is_some_and(|e| e <= MAX_EPOCH);
        let nonce_ok = rec.get("nonce").is_none_or(|v| v.is_string() || v.is_null());
        match decode_owner(KEY, &body, "\"t\"") {
            Ok(r) => {
                prop_assert!(node_ok && epoch_ok && nonce_ok, "accepted {rec}");
                prop_assert_eq!(Some(r.node.as_str()), rec["node"].as_str());
                prop_assert_eq!(Some(r.epoch), rec["epoch"].as_u64());
                prop_assert_eq!(r.etag, "\"t\"");
            }
            Err(e) => {
                prop_assert!(!(node_ok && epoch_ok && nonce_ok), "refused a valid record {rec}: {e}");
                prop_assert_eq!(e.code(), "corrupt-record");
                prop_assert!(e.to_string().contains(KEY));
            }
        }
        for bytes in [&junk[..], &body[..body.len() / 2]] {
            if let Err(e) = decode_owner(KEY, bytes, "t") {
                prop_assert_eq!(e.code(), "corrupt-record");
            }
            if let Err(e) = decode_nonce(KEY, bytes) {
                prop_assert_eq!(e.code(), "corrupt-record");
            }
        }
    }

    #[test]
    fn lease_records_decode_or_are_corrupt(rec in record(&["node", "expires_ms", "addr", "nonce", "log"]), junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let body = serde_json::to_vec(&rec).expect("values serialize");
        let ok = rec.get("node").is_some_and(|v| v.is_string())
            && rec.get("expires_ms").is_some_and(|v| v.is_u64())
            && rec.get("addr").is_none_or(|v| v.is_string())
            && rec.get("nonce").is_none_or(|v| v.is_string() || v.is_null())
            && rec.get("log").is_none_or(log_ok);
        match decode_lease("nodes/n.json", &body, "t") {
            Ok(r) => {
                prop_assert!(ok, "accepted {rec}");
                prop_assert_eq!(Some(r.expires_ms), rec["expires_ms"].as_u64());
                let state = rec.get("log").and_then(|l| l.get("state").or_else(|| l.get(0))).and_then(|s| s.as_str());
                prop_assert_eq!(r.log.as_ref().map(|l| l.state.as_str()), state);
                prop_assert_eq!(awaits_recovery(&r), state.is_some_and(|s| s != "sealed"));
            }
            Err(e) => {
                prop_assert!(!ok, "refused a valid lease {rec}: {e}");
                prop_assert_eq!(e.code(), "corrupt-record");
            }
        }
        if let Err(e) = decode_lease("nodes/n.json", &junk, "t") {
            prop_assert_eq!(e.code(), "corrupt-record");
        }
    }
}
