//! Fuzz target: the S3 answer classifier and XML error parser over arbitrary (status, ETag, body).
//! Must never panic or hang; the SPEC §3 meaning of the statuses that have one must hold.
#![no_main]

use celld_edge::env::HttpResponse;
use celld_edge::s3::{classify_get, classify_put, parse_error, GetAnswer, PutAnswer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Layout: 2 bytes status, 1 byte ETag length (0xff = no ETag), the ETag, then the body.
    if data.len() < 3 {
        return;
    }
    let status = u16::from_le_bytes([data[0], data[1]]);
    let rest = &data[3..];
    let (etag, body) = match data[2] {
        0xff => (None, rest),
        n => {
            let n = (n as usize).min(rest.len());
            (Some(String::from_utf8_lossy(&rest[..n]).into_owned()), &rest[n..])
        }
    };
    let resp = HttpResponse { status, etag: etag.clone(), body: body.to_vec() };
    let (code, message) = parse_error(body);
    assert!(code.chars().count() <= 300 && message.chars().count() <= 300);
    let has_etag = etag.as_deref().is_some_and(|e| !e.is_empty());

    match classify_put("cells/c/own.json", Ok(resp.clone())) {
        PutAnswer::Applied { etag: e } => assert!((200..300).contains(&status) && Some(e) == etag),
        PutAnswer::Rejected => assert!(matches!(status, 304 | 412 | 404)),
        PutAnswer::Conflict { .. } => assert_eq!(status, 409),
        PutAnswer::Ambiguous { .. } => {
            assert!((200..300).contains(&status) && !has_etag || matches!(status, 429 | 500..=599))
        }
        PutAnswer::Refused(e) => assert!(["auth", "request"].contains(&e.code())),
    }
    match classify_get("cells/c/own.json", Ok(resp)) {
        GetAnswer::Found { body: b, etag: e } => assert!(status == 200 && b == body && Some(e) == etag),
        GetAnswer::Missing => assert_eq!(status, 404),
        GetAnswer::Retryable { .. } => assert!(matches!(status, 200 | 429 | 500..=599)),
        GetAnswer::Refused(e) => assert!(["auth", "request"].contains(&e.code())),
    }
});
