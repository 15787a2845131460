//! The R2 binding as an S3 store: an S3 request as data (what [`Bucket::binding`] builds: unsigned, addressed
//! to [`ORIGIN`]) becomes the one binding call it means ([`Call`]), and what the binding resolved to becomes
//! the answer an S3 API would have sent ([`answer_get`], [`answer_put`], [`answer_delete`], [`answer_list`],
//! [`answer_thrown`]), so that `answer` and `list` classify it as they classify any store's, and nothing
//! above the store seam knows which transport ran. Pure: the JS side (`bindings::r2`) only calls the
//! binding and reads what it resolved to.
//!
//! It must never send a weaker request than the one asked for: the binding's `delete` takes no condition,
//! so a DELETE with `If-Match` is answered `501 NotImplemented` without calling the binding (the probe
//! then records that conditional DELETE is off, and nothing is deleted on a condition that was not
//! checked); and it must never invent a rejection a store did not make, except for an `If-Match` token that
//! no R2 object can have (R2 ETags never hold a quote).
//!
//! [`Bucket::binding`]: crate::s3::Bucket::binding

use crate::env::HttpRequest;
use crate::env::HttpResponse;
use crate::s3::date::format_http_date;
use crate::s3::list::url_decoded;
use crate::sigv4::encode::push_encoded;
use crate::sigv4::AmzDate;

/// Where a binding bucket's requests are addressed: `r2://binding/<key>`, and `r2://binding/?list-type=2&...`
/// for a listing. Not a URL any `fetch` would send.
pub const ORIGIN: &str = "r2://binding";

/// The most keys one `list` call returns (the binding's cap, as ListObjectsV2's `max-keys`).
pub const MAX_LIST: u32 = 1000;

/// The condition of a `put` (`onlyIf`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnlyIf {
    /// `{ etagDoesNotMatch: "*" }`: only if no object is there (`If-None-Match: *`).
    Absent,
    /// `{ etagMatches: etag }`, the etag unquoted as the binding takes it (`If-Match`).
    Matches(String),
}

/// One call on the binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Get { key: String },
    Put { key: String, only_if: Option<OnlyIf>, body: Vec<u8> },
    Delete { key: String },
    List { prefix: String, delimiter: Option<String>, cursor: Option<String>, limit: u32 },
}

/// The binding call `req` means, or the answer it gets without one (a condition the binding cannot
/// apply, a request no binding bucket builds).
pub fn call(req: &HttpRequest) -> Result<Call, HttpResponse> {
    let Some(rest) = req.url.strip_prefix(ORIGIN).and_then(|r| r.strip_prefix('/')) else {
        return Err(error(400, "InvalidRequest", &format!("{} is not a request for the R2 binding", req.url)));
    };
    let key = || url_decoded(rest).filter(|k| !k.is_empty()).ok_or_else(|| error(400, "InvalidURI", "the key is not percent-encoded UTF-8"));
    match req.method {
        "GET" if rest.starts_with('?') => list(&rest[1..]),
        "GET" => Ok(Call::Get { key: key()? }),
        "PUT" => {
            let only_if = match (req.header("if-none-match"), req.header("if-match")) {
                (None, None) => None,
                (Some("*"), None) => Some(OnlyIf::Absent),
                (None, Some(etag)) => Some(OnlyIf::Matches(r2_etag(etag).ok_or_else(precondition_failed)?)),
                _ => return Err(error(501, "NotImplemented", "the R2 binding takes If-None-Match: * or one If-Match, not these conditions")),
            };
            Ok(Call::Put { key: key()?, only_if, body: req.body.clone() })
        }
        "DELETE" if req.header("if-match").is_some() || req.header("if-none-match").is_some() => {
            Err(error(501, "NotImplemented", "the R2 binding's delete takes no condition"))
        }
        "DELETE" => Ok(Call::Delete { key: key()? }),
        method => Err(error(405, "MethodNotAllowed", &format!("{method} is not a request for the R2 binding"))),
    }
}

/// An S3 ETag as the binding's `etagMatches` takes it: without the quotes (the binding throws a
/// TypeError for a quoted one). `None` for a token no R2 object has: a weak, empty or quote-holding one.
fn r2_etag(etag: &str) -> Option<String> {
    let bare = etag.strip_prefix('"').and_then(|e| e.strip_suffix('"')).unwrap_or(etag);
    (!bare.is_empty() && !bare.contains('"') && !bare.starts_with("W/")).then(|| bare.to_owned())
}

/// A ListObjectsV2 query (`list-type=2&prefix=...`) as a `list` call.
fn list(query: &str) -> Result<Call, HttpResponse> {
    let (mut prefix, mut delimiter, mut cursor, mut limit, mut v2) = (String::new(), None, None, MAX_LIST, false);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, raw) = pair.split_once('=').unwrap_or((pair, ""));
        let value = url_decoded(raw).ok_or_else(|| error(400, "InvalidArgument", &format!("{name} is not percent-encoded UTF-8")))?;
        match name {
            "list-type" => v2 = value == "2",
            "encoding-type" => {}
            "prefix" => prefix = value,
            "delimiter" => delimiter = Some(value).filter(|d| !d.is_empty()),
            "continuation-token" => cursor = Some(value),
            "max-keys" => {
                limit = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_LIST).contains(n))
                    .ok_or_else(|| error(400, "InvalidArgument", &format!("max-keys {value} is not 1..={MAX_LIST}")))?;
            }
            other => return Err(error(400, "InvalidArgument", &format!("the R2 binding has no list parameter {other}"))),
        }
    }
    if !v2 {
        return Err(error(400, "InvalidArgument", "only ListObjectsV2 (list-type=2) is mapped to the R2 binding"));
    }
    Ok(Call::List { prefix, delimiter, cursor, limit })
}

/// An S3 error answer: the status and an `<Error>` document with `code` and `message`.
pub fn error(status: u16, code: &str, message: &str) -> HttpResponse {
    let mut body = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>");
    push_text(&mut body, code);
    body.push_str("</Code><Message>");
    push_text(&mut body, message);
    body.push_str("</Message></Error>");
    HttpResponse { status, etag: None, date: None, body: body.into_bytes() }
}

fn precondition_failed() -> HttpResponse {
    error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
}

/// What a GET's answer is when `get` resolved to `object` (`(etag, body)`, the etag as the binding gives it)
/// or to `null`.
pub fn answer_get(object: Option<(&str, Vec<u8>)>) -> HttpResponse {
    match object {
        Some((etag, body)) => HttpResponse { status: 200, etag: quoted(etag), date: None, body },
        None => error(404, "NoSuchKey", "The specified key does not exist."),
    }
}

/// What a PUT's answer is when `put` resolved to an object with `etag` and `uploaded` (Unix ms, when the
/// binding gave a time), or to `null` (its condition did not hold; the binding resolves `null` for nothing
/// else). The binding shows no `Date`; the written object's `uploaded` is the store's clock at the write,
/// within the call, so it stands as the answer's `Date` (whole seconds, as `Date` is read). A read's
/// `uploaded` does not: that is when the object was written, not when it was served.
pub fn answer_put(written: Option<(&str, Option<u64>)>) -> HttpResponse {
    match written {
        Some((etag, uploaded_ms)) => HttpResponse { status: 200, etag: quoted(etag), date: uploaded_ms.map(format_http_date), body: Vec::new() },
        None => precondition_failed(),
    }
}

/// What a DELETE's answer is once `delete` resolved (S3 answers 204 whether or not the key was there).
pub fn answer_delete() -> HttpResponse {
    HttpResponse { status: 204, etag: None, date: None, body: Vec::new() }
}

/// The ETag as S3 APIs send it (R2's S3 API included): quoted, so a token read through the binding is the
/// same token an S3-API client of the same bucket reads. None for none: an answer without a token is
/// ambiguous above, never applied.
fn quoted(etag: &str) -> Option<String> {
    match etag {
        "" => None,
        e if e.starts_with('"') => Some(e.to_owned()),
        e => Some(format!("\"{e}\"")),
    }
}

/// One object of a `list` page: its key and `uploaded` (Unix ms, when the binding gave a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub key: String,
    pub uploaded_ms: Option<u64>,
}

/// What a ListObjectsV2 answer is when `list` resolved to `objects`, with `cursor` when `truncated`: the
/// keys URL-encoded (`EncodingType` url), as the listing asks for them.
pub fn answer_list(objects: &[ListedObject], truncated: bool, cursor: Option<&str>) -> HttpResponse {
    let mut body = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><EncodingType>url</EncodingType>");
    body.push_str(if truncated { "<IsTruncated>true</IsTruncated>" } else { "<IsTruncated>false</IsTruncated>" });
    if let Some(cursor) = cursor.filter(|_| truncated) {
        body.push_str("<NextContinuationToken>");
        push_text(&mut body, cursor);
        body.push_str("</NextContinuationToken>");
    }
    for object in objects {
        body.push_str("<Contents><Key>");
        push_encoded(&mut body, object.key.as_bytes(), true);
        body.push_str("</Key>");
        if let Some(ms) = object.uploaded_ms {
            body.push_str("<LastModified>");
            body.push_str(&iso8601(ms));
            body.push_str("</LastModified>");
        }
        body.push_str("</Contents>");
    }
    body.push_str("</ListBucketResult>");
    HttpResponse { status: 200, etag: None, date: None, body: body.into_bytes() }
}

/// `2026-12-01T10:07:37.123Z` from Unix milliseconds.
fn iso8601(ms: u64) -> String {
    let basic = AmzDate::from_unix_ms(ms);
    let b = basic.as_str();
    let part = |from: usize, to: usize| b.get(from..to).unwrap_or("00");
    format!("{}-{}-{}T{}:{}:{}.{:03}Z", part(0, 4), part(4, 6), part(6, 8), part(9, 11), part(11, 13), part(13, 15), ms % 1000)
}

/// The answer R2's S3 API gives for what the binding threw, when its message ends with one of R2's error
/// codes (`"put: ... (10058)"`); `None` for anything else (a thrown TypeError, a lost connection), which
/// the caller reports as a request that got no answer: it may have landed.
pub fn answer_thrown(message: &str) -> Option<HttpResponse> {
    let code = message.trim_end().strip_suffix(')')?.rsplit_once('(')?.1;
    let (status, s3_code) = match code {
        "10058" => (429, "TooManyRequests"),
        "10001" => (500, "InternalError"),
        "10043" => (503, "ServiceUnavailable"),
        "10031" => (412, "PreconditionFailed"),
        "10002" => (401, "Unauthorized"),
        "10003" => (403, "AccessDenied"),
        "10006" => (404, "NoSuchBucket"),
        "10020" => (400, "InvalidObjectName"),
        "10012" => (400, "MetadataTooLarge"),
        "100100" => (400, "EntityTooLarge"),
        _ => return None,
    };
    Some(error(status, s3_code, message))
}

/// Appends `text` as XML character data: the markup characters escaped, control characters (which XML
/// 1.0 cannot carry) dropped.
fn push_text(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::TransportError;
    use crate::s3::CasGuard;
    use crate::s3::list::{classify_list, ListAnswer, ListPage, Listed};
    use crate::s3::{classify_get, classify_put, Bucket, GetAnswer, PutAnswer};

    const NOW: u64 = 1_796_119_657_000;

    fn ok(res: HttpResponse) -> Result<HttpResponse, TransportError> {
        Ok(res)
    }

    #[test]
    fn each_request_a_binding_bucket_builds_is_one_binding_call_with_its_key_decoded() {
        let mut b = Bucket::binding();
        let key = "p/cells/a b+c%é:$/own.json";
        assert_eq!(call(&b.get(key, NOW).unwrap()), Ok(Call::Get { key: key.into() }));
        let body = br#"{"node":"n","epoch":1}"#.to_vec();
        assert_eq!(
            call(&b.put(key, &CasGuard::Absent, body.clone(), NOW).unwrap()),
            Ok(Call::Put { key: key.into(), only_if: Some(OnlyIf::Absent), body: body.clone() })
        );
        assert_eq!(
            call(&b.put(key, &CasGuard::Match("\"9b2cf535f27731c974343645a3985328\"".into()), body.clone(), NOW).unwrap()),
            Ok(Call::Put { key: key.into(), only_if: Some(OnlyIf::Matches("9b2cf535f27731c974343645a3985328".into())), body })
        );
        assert_eq!(call(&b.delete(key, None, NOW).unwrap()), Ok(Call::Delete { key: key.into() }));
        assert_eq!(
            call(&b.list("p/cells/", Some("/data/"), Some("a+b/c=="), Some(2), NOW).unwrap()),
            Ok(Call::List { prefix: "p/cells/".into(), delimiter: Some("/data/".into()), cursor: Some("a+b/c==".into()), limit: 2 })
        );
        assert_eq!(
            call(&b.list("", None, None, None, NOW).unwrap()),
            Ok(Call::List { prefix: String::new(), delimiter: None, cursor: None, limit: MAX_LIST })
        );
    }

    #[test]
    fn binding_requests_are_not_signed_and_no_fetch_would_send_them() {
        let mut b = Bucket::binding();
        for req in [b.get("k", NOW).unwrap(), b.put("k", &CasGuard::Absent, b"{}".to_vec(), NOW).unwrap(), b.list("", None, None, None, NOW).unwrap()] {
            assert!(req.url.starts_with("r2://binding/"), "{}", req.url);
            assert!(req.headers.iter().all(|(n, _)| n != "authorization" && !n.starts_with("x-amz-")), "{:?}", req.headers);
        }
    }

    #[test]
    fn a_conditional_delete_is_refused_without_calling_the_binding_and_the_probe_sees_no_rejection() {
        let mut b = Bucket::binding();
        let req = b.delete("probe/cas-x", Some(&CasGuard::Match("\"e\"".into())), NOW).unwrap();
        let answer = call(&req).expect_err("a conditional delete is answered here");
        assert_eq!(answer.status, 501);
        // Not a clean rejection: the probe records conditional DELETE as off, never as honoured.
        assert!(matches!(classify_put("probe/cas-x", ok(answer)), PutAnswer::Refused(e) if e.code() == "request"));
    }

    #[test]
    fn an_if_match_token_no_r2_object_can_have_is_rejected_without_a_call() {
        let mut b = Bucket::binding();
        for etag in ["W/\"e\"", "\"\"", "\"a\"b\"", ""] {
            let req = b.put("k", &CasGuard::Match(etag.into()), b"{}".to_vec(), NOW).unwrap();
            let answer = call(&req).expect_err(etag);
            assert_eq!(classify_put("k", ok(answer)), PutAnswer::Rejected, "{etag}");
        }
        // An unquoted token (a caller's own) goes as it is.
        let req = b.put("k", &CasGuard::Match("e-2".into()), b"{}".to_vec(), NOW).unwrap();
        assert!(matches!(call(&req), Ok(Call::Put { only_if: Some(OnlyIf::Matches(e)), .. }) if e == "e-2"));
    }

    #[test]
    fn requests_no_binding_bucket_builds_are_refused_as_requests() {
        let req = |method: &'static str, url: &str, headers: &[(&str, &str)]| HttpRequest {
            method,
            url: url.into(),
            headers: headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
            body: Vec::new(),
        };
        for (r, status) in [
            (req("GET", "https://acct.r2.cloudflarestorage.com/b/k", &[]), 400),
            (req("HEAD", "r2://binding/k", &[]), 405),
            (req("GET", "r2://binding/", &[]), 400),
            (req("GET", "r2://binding/a%zz", &[]), 400),
            (req("GET", "r2://binding/?prefix=p", &[]), 400),
            (req("GET", "r2://binding/?list-type=2&max-keys=1001", &[]), 400),
            (req("GET", "r2://binding/?list-type=2&start-after=k", &[]), 400),
            (req("PUT", "r2://binding/k", &[("if-none-match", "*"), ("if-match", "\"e\"")]), 501),
            (req("PUT", "r2://binding/k", &[("if-none-match", "\"e\"")]), 501),
        ] {
            let answer = call(&r).expect_err(&r.url);
            assert_eq!(answer.status, status, "{} {}", r.method, r.url);
            assert!(matches!(classify_put("k", ok(answer)), PutAnswer::Refused(_)), "{} {}", r.method, r.url);
        }
    }

    #[test]
    fn answers_classify_as_the_same_store_answers_over_the_s3_api() {
        let etag = "9b2cf535f27731c974343645a3985328";
        let quoted = format!("\"{etag}\"");
        assert_eq!(classify_get("k", ok(answer_get(Some((etag, b"{}".to_vec()))))), GetAnswer::Found { body: b"{}".to_vec(), etag: quoted.clone() });
        assert_eq!(classify_get("k", ok(answer_get(None))), GetAnswer::Missing);
        assert_eq!(classify_put("k", ok(answer_put(Some((etag, None))))), PutAnswer::Applied { etag: quoted });
        assert_eq!(classify_put("k", ok(answer_put(None))), PutAnswer::Rejected);
        assert!(matches!(classify_put("k", ok(answer_put(Some(("", None))))), PutAnswer::Ambiguous(_)));
        assert_eq!(answer_delete(), HttpResponse { status: 204, etag: None, date: None, body: Vec::new() });
    }

    #[test]
    fn a_writes_uploaded_time_is_its_answers_date_and_a_reads_is_not() {
        // 2025-12-01T10:07:37.123Z: the whole second, as stores send `Date`.
        let written = answer_put(Some(("e", Some(1_764_583_657_123))));
        assert_eq!(written.date.as_deref(), Some("Mon, 01 Dec 2025 10:07:37 GMT"));
        assert_eq!(crate::s3::date::parse_http_date(written.date.as_deref().unwrap_or_default()), Some(1_764_583_657_000));
        assert_eq!(answer_put(Some(("e", None))).date, None);
        assert_eq!(answer_get(Some(("e", b"{}".to_vec()))).date, None);
    }

    #[test]
    fn what_the_binding_throws_keeps_its_meaning() {
        let throttled = answer_thrown("put: Reduce your concurrent request rate for the same object. (10058)").unwrap();
        assert!(matches!(classify_put("k", ok(throttled)), PutAnswer::Throttled(f) if f.status == 429));
        let internal = answer_thrown("put: We encountered an internal error. Please try again. (10001)").unwrap();
        assert!(matches!(classify_put("k", ok(internal.clone())), PutAnswer::Ambiguous(f) if f.status == 500));
        assert!(matches!(classify_get("k", ok(internal)), GetAnswer::Retryable(_)));
        let denied = answer_thrown("get: Access Denied (10003)").unwrap();
        assert!(matches!(classify_get("k", ok(denied)), GetAnswer::Refused(e) if e.code() == "auth"));
        let refused = classify_put("k", ok(answer_thrown("put: bad key <&> \u{1} (10020)").unwrap()));
        assert!(matches!(&refused, PutAnswer::Refused(e) if e.code() == "request" && e.message().contains("bad key <&>")), "{refused:?}");
        // No R2 code: the caller reports it as a request without an answer (it may have landed).
        for message in ["Conditional ETag should not be wrapped in quotes", "Network connection lost.", "put: (12)", "(10058) put: later", ""] {
            assert_eq!(answer_thrown(message), None, "{message}");
        }
    }

    #[test]
    fn a_list_page_reads_back_as_the_keys_and_times_it_was_made_of() {
        let objects = [
            ListedObject { key: "p/cells/a&b<c>/own.json".into(), uploaded_ms: Some(NOW + 123) },
            ListedObject { key: "p/cells/\u{1}é +%/own.json".into(), uploaded_ms: None },
        ];
        let page = classify_list("p/cells/", ok(answer_list(&objects, true, Some("cur&sor<1>"))));
        let expected = ListPage {
            objects: vec![
                Listed { key: objects[0].key.clone(), last_modified_ms: Some(NOW + 123) },
                Listed { key: objects[1].key.clone(), last_modified_ms: None },
            ],
            next: Some("cur&sor<1>".into()),
        };
        assert_eq!(page, ListAnswer::Page(expected));
        assert_eq!(classify_list("p/", ok(answer_list(&[], false, Some("ignored")))), ListAnswer::Page(ListPage { objects: vec![], next: None }));
        assert_eq!(iso8601(NOW + 5), "2026-12-01T10:07:37.005Z");
    }
}
