//! What the store's answers mean (SPEC §3): each HTTP outcome of a GET or a conditional PUT becomes one
//! value of a small enum. Pure and total: every status, header and body — however malformed — maps to
//! an answer, never a panic. An answer no S3 API would give (an HTML page, a JSON document where S3
//! sends XML or nothing) is a `request` refusal saying "not an S3 API": a wrong endpoint must never read
//! as a store that breaks conditional writes, nor as a write that may have landed.

use crate::env::{HttpResponse, NetworkError, TransportError, Unsent};
use crate::error::{Error, Failure, Fault, Quoted, Refusal};
use super::xml::unescape_lenient;
use crate::sigv4::split_once_str;

/// A conditional PUT's answer, before any readback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutAnswer {
    /// 2xx with an ETag: landed; the ETag is the new token.
    Applied { etag: String },
    /// 412 / 304, or 404 NoSuchKey on `If-Match`: cleanly not applied, the guard no longer holds.
    Rejected,
    /// 409 ConditionalRequestConflict / OperationAborted: not applied; re-read and decide again.
    Conflict { code: String },
    /// 429 or 503 SlowDown: the store turned the write away for now (R2 takes one write per second per
    /// key, S3 slows same-key bursts down); not applied:
    /// back off, re-read and decide again. Never another owner's rejection.
    Throttled(Fault),
    /// 5xx, timeout, network error, or 2xx without an ETag: it may have landed.
    Ambiguous(Fault),
    /// Refused outright (auth / malformed request): not applied, and trying again will not help.
    Refused(Error),
}

/// A GET's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetAnswer {
    Found { body: Vec<u8>, etag: String },
    Missing,
    /// Worth another try after a pause (5xx, 429, network, timeout).
    Retryable(Fault),
    Refused(Error),
}

/// `<Code>` and `<Message>` of an S3 XML error body; empty strings when absent.
pub fn parse_error(body: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(body);
    (xml_element(&text, "Code"), xml_element(&text, "Message"))
}

/// The text of the first `<name>…</name>`, entity-decoded and bounded in length (it ends up in messages).
fn xml_element(text: &str, name: &str) -> String {
    let Some((_, after)) = split_once_str(text, &format!("<{name}>")) else { return String::new() };
    let Some((raw, _)) = split_once_str(after, &format!("</{name}>")) else { return String::new() };
    unescape_lenient(raw).chars().take(300).collect()
}

fn store_error(key: &str, status: u16, body: &[u8]) -> Error {
    let (code, message) = parse_error(body);
    let auth_codes = [
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
        "AccessDenied",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "RequestTimeTooSkewed",
        "AuthorizationHeaderMalformed",
        "MissingSecurityHeader",
        // Unknown access keys, as stores other than AWS S3 name them (versitygw: 404 XAdminUserNotFound).
        "XAdminUserNotFound",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
    ];
    let key = key.to_owned();
    if let Some(region) = wanted_region(&code, &message, body) {
        // Signed for another region: the configuration is wrong, not the keys.
        let message = format!("the bucket is in region {}: set the region option to it (the store said: {message})", Quoted(&region));
        return Error::Request(Box::new(Refusal { key, status, code, message, source: None }));
    }
    let auth = status == 401 || status == 403 || auth_codes.contains(&code.as_str());
    let refusal = Box::new(Refusal { key, status, code, message, source: None });
    if auth { Error::Auth(refusal) } else { Error::Request(refusal) }
}

/// The region a store says a request should have been signed for: AWS puts it in `<Region>` of its
/// `AuthorizationHeaderMalformed`; others only say "… expecting 'eu-west-1'" (MinIO) or
/// "… expecting \"eu-west-1\"" (versitygw) in the message. `None` unless it reads as a region name.
fn wanted_region(code: &str, message: &str, body: &[u8]) -> Option<String> {
    let element = xml_element(&String::from_utf8_lossy(body), "Region");
    let region = if !element.is_empty() {
        element
    } else if code == "AuthorizationHeaderMalformed" && message.contains("region") {
        let (_, after) = split_once_str(message, "expecting")?;
        after.trim_matches(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '.' | '`')).to_owned()
    } else {
        return None;
    };
    let name = !region.is_empty() && region.len() <= 64 && region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    name.then_some(region)
}

/// What a body is when no S3 API would send it where S3 sends XML or nothing; `None` when S3 could have
/// (empty, or XML). Our own records are JSON, so a GET's body is judged by [`html`] alone.
pub(crate) fn foreign(body: &[u8]) -> Option<&'static str> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace()).map_or(&[][..], |i| &body[i..]);
    let start = start.strip_prefix("\u{feff}".as_bytes()).unwrap_or(start);
    match start.first() {
        None => None,
        Some(b'<') if html(start) => Some("an HTML page"),
        Some(b'<') => None,
        Some(b'{' | b'[') => Some("a JSON document"),
        Some(_) => Some("a body that is not XML"),
    }
}

/// The body starts like an HTML document (after whitespace).
fn html(body: &[u8]) -> bool {
    let start = body.iter().position(|b| !b.is_ascii_whitespace()).map_or(&[][..], |i| &body[i..]);
    let head = &start[..start.len().min(14)];
    ["<!doctype html", "<html", "<head", "<body"]
        .iter()
        .any(|tag| head.len() >= tag.len() && head[..tag.len()].eq_ignore_ascii_case(tag.as_bytes()))
}

/// The `request` refusal of an answer that did not come from an S3 API.
fn not_s3(key: &str, status: u16, what: &str) -> Error {
    let message = format!("not an S3 API: it answered {status} with {what} (check the endpoint)");
    Error::Request(Box::new(Refusal { key: key.to_owned(), status, code: String::new(), message, source: None }))
}

/// A refusal (3xx, 4xx, 501): the store's own, or "not an S3 API" when the body is not S3's. 401/403 stay
/// `auth` whatever the body: a proxy's denial page in front of a real store is still a denial.
fn refusal(key: &str, status: u16, body: &[u8]) -> Error {
    match foreign(body) {
        Some(what) if status != 401 && status != 403 => not_s3(key, status, what),
        _ => store_error(key, status, body),
    }
}

/// The `request` refusal of a store that answers 501 to a conditional write, saying why it cannot be used.
fn no_conditional_writes(key: &str, body: &[u8]) -> Error {
    let (code, store_message) = parse_error(body);
    let message = format!("the store does not implement conditional writes (If-None-Match / If-Match), which ownership needs: {store_message}");
    Error::Request(Box::new(Refusal { key: key.to_owned(), status: 501, code, message, source: None }))
}

/// A 5xx's or 429's fault: its status and the store's code.
fn answered(status: u16, body: &[u8]) -> Fault {
    let (code, _) = parse_error(body);
    let detail = if code.is_empty() { format!("status {status}") } else { format!("{status} {code}") };
    Fault { detail, status, code, source: None }
}

fn transport_fault(e: TransportError) -> Fault {
    match e {
        TransportError::TimedOut => Fault::new("timed out (aborted)"),
        TransportError::Network(n) => Fault { detail: format!("network error: {}", n.detail), source: n.source, ..Fault::default() },
        TransportError::Unreadable { status, detail } => Fault { detail, status, ..Fault::default() },
        TransportError::Unsent(_, n) => Fault { detail: n.detail, source: n.source, ..Fault::default() },
    }
}

/// The error of a request the runtime would not send (nothing reached the store): `cors` for a browser's
/// refusal, else `transport`; either way final, as sending it again cannot change it.
fn unsent(key: &str, why: Unsent, n: NetworkError) -> Error {
    let failure = Box::new(Failure { key: key.to_owned(), fault: Fault { detail: n.detail, source: n.source, ..Fault::default() } });
    match why {
        Unsent::Cors => Error::Cors(failure),
        Unsent::NoTls => Error::Transport(failure),
    }
}

/// Classifies the answer to a conditional PUT of `key` (SPEC §3's table, row by row).
pub fn classify_put(key: &str, answer: Result<HttpResponse, TransportError>) -> PutAnswer {
    let resp = match answer {
        Ok(resp) => resp,
        Err(TransportError::Unsent(why, n)) => return PutAnswer::Refused(unsent(key, why, n)),
        Err(e) => return PutAnswer::Ambiguous(transport_fault(e)),
    };
    match resp.status {
        // S3 answers a write with no body (or XML): a page or a JSON document is some other server's.
        status @ 200..=299 => match (foreign(&resp.body), resp.etag) {
            (Some(what), _) => PutAnswer::Refused(not_s3(key, status, what)),
            (None, Some(etag)) if !etag.is_empty() => PutAnswer::Applied { etag },
            _ => PutAnswer::Ambiguous(Fault { detail: format!("{status} without an ETag"), status, ..Fault::default() }),
        },
        304 | 412 => PutAnswer::Rejected,
        404 if parse_error(&resp.body).0 == "NoSuchKey" => PutAnswer::Rejected,
        409 if foreign(&resp.body).is_some() => PutAnswer::Refused(refusal(key, 409, &resp.body)),
        409 => {
            let (code, _) = parse_error(&resp.body);
            match code.as_str() {
                // A 409 that is not about the condition (e.g. the bucket is being deleted) will not pass.
                "" | "ConditionalRequestConflict" | "OperationAborted" => PutAnswer::Conflict { code },
                _ => PutAnswer::Refused(store_error(key, 409, &resp.body)),
            }
        }
        // 501 from the store itself (an S3 error body): it does not implement the conditional headers
        // every write here carries (Backblaze B2); nothing was applied, and nothing here can work.
        501 if foreign(&resp.body).is_none() && !parse_error(&resp.body).0.is_empty() => {
            PutAnswer::Refused(no_conditional_writes(key, &resp.body))
        }
        501 => PutAnswer::Refused(refusal(key, 501, &resp.body)),
        // A rate limit turns a request away before it is served (R2: one write per second per key; S3's
        // 503 SlowDown to same-key bursts, with or without Retry-After): SPEC §6 takes both as refusals.
        429 => PutAnswer::Throttled(answered(429, &resp.body)),
        503 if parse_error(&resp.body).0 == "SlowDown" => PutAnswer::Throttled(answered(503, &resp.body)),
        // A CDN's error page in front of a real store is HTML too: a 5xx stays "may have landed".
        500..=599 => PutAnswer::Ambiguous(answered(resp.status, &resp.body)),
        status => PutAnswer::Refused(refusal(key, status, &resp.body)),
    }
}

/// Classifies the answer to a GET of `key`.
pub fn classify_get(key: &str, answer: Result<HttpResponse, TransportError>) -> GetAnswer {
    let resp = match answer {
        Ok(resp) => resp,
        Err(TransportError::Unreadable { status, detail }) => {
            return GetAnswer::Refused(Error::Request(Box::new(Refusal { key: key.to_owned(), status, code: String::new(), message: detail, source: None })));
        }
        Err(TransportError::Unsent(why, n)) => return GetAnswer::Refused(unsent(key, why, n)),
        Err(e) => return GetAnswer::Retryable(transport_fault(e)),
    };
    match resp.status {
        200 => match resp.etag {
            Some(etag) if !etag.is_empty() => GetAnswer::Found { body: resp.body, etag },
            // S3 always sends one: a page without it is a website (often one that answers every path
            // with its index page), not the bucket. With an ETag, HTML in a record is a corrupt record.
            _ if html(&resp.body) => GetAnswer::Refused(not_s3(key, 200, "an HTML page and no ETag")),
            // Without a token the record cannot be guarded against; a retry may fare better.
            _ => GetAnswer::Retryable(Fault { detail: "200 without an ETag".to_owned(), status: 200, ..Fault::default() }),
        },
        // Only S3's own "no such key" means absent: an HTML 404 means we are not talking to the bucket.
        404 => match parse_error(&resp.body).0.as_str() {
            "NoSuchKey" => GetAnswer::Missing,
            "" if resp.body.is_empty() => GetAnswer::Missing,
            _ => GetAnswer::Refused(refusal(key, 404, &resp.body)),
        },
        429 | 500..=599 => GetAnswer::Retryable(answered(resp.status, &resp.body)),
        status => GetAnswer::Refused(refusal(key, status, &resp.body)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::NetworkError;
    use crate::error::Source;

    fn resp(status: u16, etag: Option<&str>, body: &str) -> Result<HttpResponse, TransportError> {
        Ok(HttpResponse { status, etag: etag.map(str::to_owned), body: body.as_bytes().to_vec(), date: None })
    }

    fn xml(code: &str) -> String {
        format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>m &amp; n</Message></Error>")
    }

    #[test]
    fn put_answers_follow_the_spec_table() {
        use PutAnswer::*;
        let cases: Vec<(Result<HttpResponse, TransportError>, &str)> = vec![
            (resp(200, Some("\"abc\""), ""), "applied"),
            (resp(204, Some("W/\"x\""), ""), "applied"),
            (resp(200, None, ""), "ambiguous"),
            (resp(200, Some(""), ""), "ambiguous"),
            (resp(412, None, &xml("PreconditionFailed")), "rejected"),
            (resp(304, None, ""), "rejected"),
            (resp(404, None, &xml("NoSuchKey")), "rejected"),
            (resp(404, None, &xml("NoSuchBucket")), "request"),
            (resp(409, None, &xml("ConditionalRequestConflict")), "conflict"),
            (resp(409, None, &xml("OperationAborted")), "conflict"),
            (resp(409, None, ""), "conflict"),
            (resp(409, None, &xml("BucketNotEmpty")), "request"),
            (resp(400, None, &xml("InvalidArgument")), "request"),
            (resp(400, None, &xml("AuthorizationHeaderMalformed")), "auth"),
            (resp(401, None, ""), "auth"),
            (resp(403, None, &xml("SignatureDoesNotMatch")), "auth"),
            (resp(403, None, &xml("AccessDenied")), "auth"),
            (resp(301, None, &xml("PermanentRedirect")), "request"),
            (resp(429, None, ""), "throttled"),
            (resp(429, None, &xml("TooManyRequests")), "throttled"),
            (resp(404, None, &xml("XAdminUserNotFound")), "auth"),
            (resp(403, None, &xml("InvalidAccessKeyId")), "auth"),
            (resp(400, None, &xml("InvalidClientTokenId")), "auth"),
            (resp(500, None, &xml("InternalError")), "ambiguous"),
            (resp(503, None, &xml("SlowDown")), "throttled"),
            (resp(503, None, &xml("ServiceUnavailable")), "ambiguous"),
            (resp(503, None, ""), "ambiguous"),
            (resp(501, None, &xml("NotImplemented")), "request"),
            (Err(TransportError::TimedOut), "ambiguous"),
            (Err(TransportError::Network("reset".into())), "ambiguous"),
        ];
        for (answer, want) in cases {
            let got = match classify_put("k", answer.clone()) {
                Applied { .. } => "applied",
                Rejected => "rejected",
                Conflict { .. } => "conflict",
                Throttled(_) => "throttled",
                Ambiguous(_) => "ambiguous",
                Refused(e) => e.code(),
            };
            assert_eq!(got, want, "{answer:?}");
        }
        assert_eq!(classify_put("k", resp(200, Some("\"t\""), "")), Applied { etag: "\"t\"".into() });
    }

    #[test]
    fn a_request_the_runtime_would_not_send_is_refused_at_once_and_never_ambiguous() {
        let source = Source::new("TypeError: Failed to fetch".to_owned());
        let unsent = |why| Err(TransportError::Unsent(why, NetworkError { detail: "the rule lacks if-none-match".into(), source: Some(source.clone()) }));
        let PutAnswer::Refused(e) = classify_put("nodes/n.json", unsent(Unsent::Cors)) else { panic!("a write never sent did not land") };
        assert_eq!((e.code(), e.key(), e.fault().source.as_ref()), ("cors", Some("nodes/n.json"), Some(&source)));
        assert_eq!(e.to_string(), "the browser would not send the request for nodes/n.json (the bucket's CORS rule refused it): the rule lacks if-none-match");
        let GetAnswer::Refused(e) = classify_get("k", unsent(Unsent::Cors)) else { panic!("not retried") };
        assert_eq!(e.code(), "cors");
        let PutAnswer::Refused(e) = classify_put("k", unsent(Unsent::NoTls)) else { panic!("a write never sent did not land") };
        assert_eq!(e.code(), "transport");
        let GetAnswer::Refused(e) = classify_get("k", unsent(Unsent::NoTls)) else { panic!("not retried") };
        assert_eq!(e.to_string(), "transport failure on k: the rule lacks if-none-match");
    }

    #[test]
    fn refusals_carry_the_store_code_and_message_and_key() {
        match classify_put("cells/c/own.json", resp(403, None, &xml("SignatureDoesNotMatch"))) {
            PutAnswer::Refused(e) => {
                let text = e.to_string();
                assert!(text.contains("SignatureDoesNotMatch") && text.contains("m & n"), "{text}");
                assert!(text.contains("cells/c/own.json"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_wrong_region_is_a_request_error_naming_the_region_the_store_wants() {
        let bodies = [
            // AWS: the region in its own element.
            "<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>",
            // versitygw (Go's encoding/xml writes `"` as `&#34;`).
            "<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region &#34;us-east-1&#34; is wrong; expecting &#34;eu-west-1&#34;</Message></Error>",
            // MinIO.
            "<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region is wrong; expecting 'eu-west-1'.</Message></Error>",
        ];
        for body in bodies {
            for e in [
                match classify_put("nodes/n.json", resp(400, None, body)) { PutAnswer::Refused(e) => e, other => panic!("{other:?}") },
                match classify_get("nodes/n.json", resp(400, None, body)) { GetAnswer::Refused(e) => e, other => panic!("{other:?}") },
            ] {
                assert_eq!((e.code(), e.fault().status, e.fault().code.as_str()), ("request", 400, "AuthorizationHeaderMalformed"), "{body}");
                let text = e.to_string();
                assert!(text.starts_with("store refused request for nodes/n.json: 400 AuthorizationHeaderMalformed: the bucket is in region \"eu-west-1\": set the region option to it (the store said: The authorization header is malformed;"), "{text}");
                assert!(!text.contains("&#34;"), "{text}");
            }
        }
        // Malformed for another reason: still `auth`, as before.
        let other = "<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; a non-empty Access Key (AKID) must be provided in the credential.</Message></Error>";
        let PutAnswer::Refused(e) = classify_put("k", resp(400, None, other)) else { panic!("refused") };
        assert_eq!(e.code(), "auth");
        // A region element that is not a region name is not trusted as one.
        let odd = "<Error><Code>AuthorizationHeaderMalformed</Code><Message>m</Message><Region>eu west</Region></Error>";
        let PutAnswer::Refused(e) = classify_put("k", resp(400, None, odd)) else { panic!("refused") };
        assert_eq!(e.code(), "auth");
    }

    #[test]
    fn a_501_to_a_conditional_write_says_the_store_has_no_conditional_writes() {
        let b2 = "<Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>";
        let PutAnswer::Refused(e) = classify_put("cells/c/own.json", resp(501, None, b2)) else { panic!("501 is refused") };
        assert_eq!(e.code(), "request");
        assert_eq!((e.fault().status, e.fault().code.as_str()), (501, "NotImplemented"));
        assert_eq!(
            e.to_string(),
            "store refused request for cells/c/own.json: 501 NotImplemented: the store does not implement conditional writes (If-None-Match / If-Match), which ownership needs: A header you provided implies functionality that is not implemented"
        );
    }

    #[test]
    fn an_unknown_access_key_is_auth_whatever_the_status() {
        // versitygw answers an access key it does not know with 404 XAdminUserNotFound, to reads and writes.
        let body = xml("XAdminUserNotFound");
        let PutAnswer::Refused(e) = classify_put("k", resp(404, None, &body)) else { panic!("refused") };
        assert_eq!((e.code(), e.fault().status), ("auth", 404));
        let GetAnswer::Refused(e) = classify_get("k", resp(404, None, &body)) else { panic!("refused") };
        assert_eq!((e.code(), e.fault().code.as_str()), ("auth", "XAdminUserNotFound"));
    }

    #[test]
    fn get_answers() {
        assert_eq!(
            classify_get("k", resp(200, Some("\"e\""), "{}")),
            GetAnswer::Found { body: b"{}".to_vec(), etag: "\"e\"".into() }
        );
        assert_eq!(classify_get("k", resp(404, None, &xml("NoSuchKey"))), GetAnswer::Missing);
        assert!(matches!(classify_get("k", resp(404, None, &xml("NoSuchBucket"))), GetAnswer::Refused(_)));
        assert_eq!(classify_get("k", resp(404, None, "")), GetAnswer::Missing);
        assert_eq!(kind_get(classify_get("k", resp(404, None, "<html>Not Found</html>"))), "not-s3");
        assert!(matches!(classify_get("k", resp(200, None, "{}")), GetAnswer::Retryable(_)));
        assert!(matches!(classify_get("k", resp(503, None, "")), GetAnswer::Retryable(_)));
        assert!(matches!(classify_get("k", Err(TransportError::TimedOut)), GetAnswer::Retryable(_)));
        // A browser hid the ETag (CORS): refused at once, never retried; a write so answered may have landed.
        let hidden = || Err(TransportError::Unreadable { status: 200, detail: "no readable ETag".into() });
        match classify_get("k", hidden()) {
            GetAnswer::Refused(e) => assert_eq!((e.code(), e.fault().status), ("request", 200)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(classify_put("k", hidden()), PutAnswer::Ambiguous(f) if f.status == 200));
        match classify_get("k", resp(403, None, "<html>denied</html>")) {
            GetAnswer::Refused(e) => assert_eq!(e.code(), "auth"),
            other => panic!("{other:?}"),
        }
    }

    /// What a classified answer is, in one word (`not-s3` for a "not an S3 API" refusal).
    fn kind_put(a: PutAnswer) -> &'static str {
        match a {
            PutAnswer::Applied { .. } => "applied",
            PutAnswer::Rejected => "rejected",
            PutAnswer::Conflict { .. } => "conflict",
            PutAnswer::Throttled(_) => "throttled",
            PutAnswer::Ambiguous(_) => "ambiguous",
            PutAnswer::Refused(e) => kind_error(&e),
        }
    }

    fn kind_get(a: GetAnswer) -> &'static str {
        match a {
            GetAnswer::Found { .. } => "found",
            GetAnswer::Missing => "missing",
            GetAnswer::Retryable(_) => "retryable",
            GetAnswer::Refused(e) => kind_error(&e),
        }
    }

    fn kind_error(e: &Error) -> &'static str {
        match e {
            Error::Request(r) if r.message.starts_with("not an S3 API") => {
                assert!(e.to_string().contains("not an S3 API"), "{e}");
                "not-s3"
            }
            e => e.code(),
        }
    }

    const PAGE: &str = "<!DOCTYPE html><html><head><title>Welcome</title></head><body>hi</body></html>";

    #[test]
    fn answers_no_s3_api_gives_are_request_refusals_saying_so() {
        let cases: &[(u16, Option<&str>, &str, &str, &str)] = &[
            // status, ETag, body, as a PUT's answer, as a GET's answer
            // A GET's 200 with an ETag is an object, HTML or not (a corrupt record, when it is ours).
            (200, Some("\"p\""), PAGE, "not-s3", "found"),
            (200, None, PAGE, "not-s3", "not-s3"),
            (200, None, "\n  <html lang=en>", "not-s3", "not-s3"),
            (200, None, "<HEAD></HEAD>", "not-s3", "not-s3"),
            (200, None, r#"{"ok":true}"#, "not-s3", "retryable"),
            (200, Some("\"j\""), r#"{"ok":true}"#, "not-s3", "found"),
            (201, Some("\"j\""), "[1,2]", "not-s3", "not-s3"),
            (200, Some("\"t\""), "OK", "not-s3", "found"),
            (200, Some("\"t\""), "\u{feff}{\"a\":1}", "not-s3", "found"),
            // What S3 answers: nothing, or XML.
            (200, Some("\"e\""), "", "applied", "found"),
            (200, Some("\"e\""), " \r\n", "applied", "found"),
            (200, Some("\"e\""), "<?xml version=\"1.0\"?><PutObjectResult/>", "applied", "found"),
            (404, None, PAGE, "not-s3", "not-s3"),
            (404, None, "404 page not found\n", "not-s3", "not-s3"),
            (404, None, r#"{"error":"not found"}"#, "not-s3", "not-s3"),
            (404, None, &xml("NoSuchKey"), "rejected", "missing"),
            (404, None, "", "request", "missing"),
            (400, None, r#"{"message":"bad"}"#, "not-s3", "not-s3"),
            (405, None, PAGE, "not-s3", "not-s3"),
            (301, None, PAGE, "not-s3", "not-s3"),
            (301, None, &xml("PermanentRedirect"), "request", "request"),
            (409, None, PAGE, "not-s3", "not-s3"),
            (501, None, "Not Implemented", "not-s3", "retryable"),
            (501, None, &xml("NotImplemented"), "request", "retryable"),
            // A denial is a denial, whoever's page says it; a 5xx page may front a real store.
            (403, None, PAGE, "auth", "auth"),
            (401, None, r#"{"error":"unauthorized"}"#, "auth", "auth"),
            (502, None, PAGE, "ambiguous", "retryable"),
            (503, None, "<html><body>Service Unavailable</body></html>", "ambiguous", "retryable"),
            (412, None, PAGE, "rejected", "not-s3"),
        ];
        for &(status, etag, body, put, get) in cases {
            let answer = resp(status, etag, body);
            assert_eq!(kind_put(classify_put("k", answer.clone())), put, "PUT {status} {etag:?} {body:?}");
            assert_eq!(kind_get(classify_get("k", answer)), get, "GET {status} {etag:?} {body:?}");
        }
        match classify_put("probe/cas-x-a", resp(200, Some("\"p\""), PAGE)) {
            PutAnswer::Refused(e) => assert_eq!(
                e.to_string(),
                "store refused request for probe/cas-x-a: 200: not an S3 API: it answered 200 with an HTML page (check the endpoint)"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_bodies_of_any_shape() {
        assert_eq!(parse_error(b""), (String::new(), String::new()));
        assert_eq!(parse_error(b"<Code>Open"), (String::new(), String::new()));
        assert_eq!(parse_error(b"\xff<Code>\xfeX</Code>").0, "\u{fffd}X");
        assert_eq!(parse_error("<Code>é</Code><Message></Message>".as_bytes()), ("é".into(), String::new()));
        let entities = "<Code>&lt;&gt;&quot;&apos;&amp;&amp;lt;&bogus;&</Code>";
        assert_eq!(parse_error(entities.as_bytes()).0, "<>\"'&&lt;&bogus;&");
        let long = format!("<Message>{}</Message>", "x".repeat(10_000));
        assert_eq!(parse_error(long.as_bytes()).1.len(), 300);
    }

    #[test]
    fn what_went_wrong_is_kept_for_the_caller() {
        // A 5xx: its status and the store's code, for a write and a read alike.
        let slow = Fault { detail: "503 SlowDown".into(), status: 503, code: "SlowDown".into(), source: None };
        assert_eq!(classify_put("k", resp(503, None, &xml("SlowDown"))), PutAnswer::Throttled(slow.clone()));
        assert_eq!(classify_get("k", resp(503, None, &xml("SlowDown"))), GetAnswer::Retryable(slow));
        // No answer: the runtime's error, the very value, and its text.
        let source = Source::new("ECONNREFUSED".to_owned());
        let refused = || Err(TransportError::Network(NetworkError { detail: "fetch failed (ECONNREFUSED)".into(), source: Some(source.clone()) }));
        let PutAnswer::Ambiguous(f) = classify_put("k", refused()) else { panic!("a lost write is ambiguous") };
        assert_eq!((f.detail.as_str(), f.status, f.source.as_ref()), ("network error: fetch failed (ECONNREFUSED)", 0, Some(&source)));
        let GetAnswer::Retryable(f) = classify_get("k", refused()) else { panic!("a lost read is retried") };
        assert_eq!(f.source.and_then(|s| s.get::<String>().cloned()).as_deref(), Some("ECONNREFUSED"));
        // A refusal: the error's own fault says its status and code.
        let GetAnswer::Refused(e) = classify_get("k", resp(403, None, &xml("AccessDenied"))) else { panic!("403 is refused") };
        assert_eq!((e.key(), e.fault().status, e.fault().code.as_str()), (Some("k"), 403, "AccessDenied"));
    }
}
