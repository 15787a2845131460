//! What a ListObjectsV2 answer means: one page of keys (with their `LastModified`), and the token of the
//! next page when the listing is truncated. Pure and total, like `answer`: any status or body maps to a
//! page, a retryable failure or a typed error that keeps its cause. A body that is not S3's XML (an HTML
//! page, a JSON API) is `request` ("not an S3 API"); a `ListBucketResult` that does not read as one is
//! `request` too, naming what was wrong. It must never return a page it did not read in full: a key
//! dropped here is a cell an operator never sees. Listings ask for `encoding-type=url` (a key may hold
//! characters XML cannot carry, which some stores then send raw and so break the whole page); keys are
//! decoded when the answer says `<EncodingType>url</EncodingType>`, as botocore decodes them (`+` is a
//! space), and taken as they are from a store that ignored the request.

use crate::env::{HttpResponse, TransportError};
use crate::error::{Error, Fault, Refusal};
use crate::s3::answer::{classify_get, foreign, parse_error, GetAnswer};
use crate::s3::xml::{tokens, Token};

/// One object of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    /// `LastModified` as Unix milliseconds (the store's clock), when it reads as an ISO 8601 UTC time.
    pub last_modified_ms: Option<u64>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    pub objects: Vec<Listed>,
    /// `NextContinuationToken` when `IsTruncated` is true: send it back, exactly, for the next page.
    pub next: Option<String>,
}

/// A listing GET's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListAnswer {
    Page(ListPage),
    /// Worth another try after a pause (5xx, 429, network, timeout).
    Retryable(Fault),
    Refused(Error),
}

/// `request` about the listing of `prefix`: the store answered, but not as S3 does.
fn not_s3(prefix: &str, status: u16, why: String) -> Error {
    let key = format!("list {prefix}*");
    Error::Request(Box::new(Refusal { key, status, code: String::new(), message: why, source: None }))
}

/// Classifies the answer to a ListObjectsV2 GET of `prefix`.
pub fn classify_list(prefix: &str, answer: Result<HttpResponse, TransportError>) -> ListAnswer {
    let status = match &answer {
        Ok(resp) => resp.status,
        Err(_) => 0,
    };
    match answer {
        Ok(resp) if resp.status == 200 => match parse_page(&resp.body) {
            Ok(page) => ListAnswer::Page(page),
            Err(Parsed::NotS3(why)) => ListAnswer::Refused(not_s3(prefix, 200, format!("not an S3 API: {why}"))),
            Err(Parsed::Malformed(why)) => {
                ListAnswer::Refused(not_s3(prefix, 200, format!("malformed ListObjectsV2 answer: {why}")))
            }
            Err(Parsed::StoreError) => ListAnswer::Refused(store_refusal(prefix, 200, &resp.body)),
        },
        // Every other status means what it means for a GET, except that a listing never finds "nothing":
        // a 404 is the bucket missing (NoSuchBucket), or not an S3 endpoint at all.
        answer => match classify_get(prefix, answer) {
            GetAnswer::Retryable(fault) => ListAnswer::Retryable(fault),
            GetAnswer::Refused(e) => ListAnswer::Refused(e),
            GetAnswer::Missing | GetAnswer::Found { .. } => {
                ListAnswer::Refused(not_s3(prefix, status, "the listing was answered as a missing object".to_owned()))
            }
        },
    }
}

/// An S3 `<Error>` document answered with 200 (S3 does that when a request fails after the status was
/// sent): the store's own code and message.
fn store_refusal(prefix: &str, status: u16, body: &[u8]) -> Error {
    let (code, message) = parse_error(body);
    let key = format!("list {prefix}*");
    Error::Request(Box::new(Refusal { key, status, code, message, source: None }))
}

enum Parsed {
    /// Not XML, or XML of another API.
    NotS3(String),
    /// A ListBucketResult that does not read as one.
    Malformed(String),
    /// An S3 `<Error>` document.
    StoreError,
}

/// Reads a `ListBucketResult` (ListObjectsV2), namespaced or not, compact or pretty-printed.
fn parse_page(body: &[u8]) -> Result<ListPage, Parsed> {
    if let Some(what) = foreign(body) {
        return Err(Parsed::NotS3(format!("{what} where ListObjectsV2 XML was expected")));
    }
    let start = body.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(body.len());
    let head = body.get(start..).unwrap_or_default();
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if head.is_empty() {
        return Err(Parsed::NotS3("an empty body where ListObjectsV2 XML was expected".to_owned()));
    }
    let tokens = tokens(head).map_err(Parsed::Malformed)?;
    match tokens.first() {
        Some(Token::Start("ListBucketResult")) => {}
        Some(Token::Start("Error")) => return Err(Parsed::StoreError),
        Some(Token::Start(root)) => return Err(Parsed::NotS3(format!("XML whose root is <{}>, not <ListBucketResult>", *root))),
        _ => return Err(Parsed::Malformed("no root element".to_owned())),
    }
    let malformed = |why: String| Parsed::Malformed(why);
    let mut path: Vec<&str> = Vec::new();
    let mut text = String::new();
    let (mut objects, mut truncated, mut next, mut encoding) = (Vec::new(), None, None, None);
    let (mut key, mut modified): (Option<String>, Option<Option<u64>>) = (None, None);
    for token in tokens {
        match token {
            Token::Start(name) => {
                if name == "Contents" && path.len() == 1 {
                    (key, modified) = (None, None);
                }
                path.push(name);
                text.clear();
            }
            Token::Text(t) => text.push_str(&t),
            Token::End(name) => {
                let value = core::mem::take(&mut text);
                let depth = path.len();
                path.pop();
                let parent = path.last().copied().unwrap_or("");
                match (depth, parent, name) {
                    (2, _, "IsTruncated") => {
                        let flag = match value.trim() {
                            "true" => true,
                            "false" => false,
                            other => return Err(malformed(format!("IsTruncated is \"{other}\", not true/false"))),
                        };
                        set_once(&mut truncated, flag, "IsTruncated given twice")?;
                    }
                    (2, _, "EncodingType") => {
                        set_once(&mut encoding, value.trim().eq_ignore_ascii_case("url"), "EncodingType given twice")?;
                    }
                    (2, _, "NextContinuationToken") => {
                        set_once(&mut next, value.trim().to_owned(), "NextContinuationToken given twice")?;
                    }
                    (3, "Contents", "Key") => {
                        set_once(&mut key, value, "a <Contents> with two <Key>s")?;
                    }
                    (3, "Contents", "LastModified") => {
                        set_once(&mut modified, iso8601_ms(value.trim()), "a <Contents> with two <LastModified>s")?;
                    }
                    (2, _, "Contents") => match key.take() {
                        Some(key) if !key.is_empty() => {
                            objects.push(Listed { key, last_modified_ms: modified.take().flatten() });
                        }
                        _ => return Err(malformed("a <Contents> without a <Key>".to_owned())),
                    },
                    _ => {}
                }
            }
        }
    }
    if encoding == Some(true) {
        for object in &mut objects {
            object.key = url_decoded(&object.key).ok_or_else(|| malformed(format!("key {} is not URL-encoded UTF-8", crate::error::Quoted(&object.key))))?;
        }
    }
    let next = match (truncated, next) {
        (Some(true), Some(token)) if !token.is_empty() => Some(token),
        (Some(true), _) => return Err(malformed("IsTruncated is true but no NextContinuationToken".to_owned())),
        _ => None,
    };
    Ok(ListPage { objects, next })
}

/// A key as `encoding-type=url` sent it, decoded: `%XX` escapes and `+` for a space (S3's form
/// encoding); `None` for a stray `%` or bytes that are not UTF-8.
pub(crate) fn url_decoded(key: &str) -> Option<String> {
    if !key.contains(['%', '+']) {
        return Some(key.to_owned());
    }
    let hex = |b: u8| char::from(b).to_digit(16);
    let b = key.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'%' => {
                let high = hex(*b.get(i + 1)?)?;
                let low = hex(*b.get(i + 2)?)?;
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Fills a field once: a repeated one means the page is not what it seems.
fn set_once<T>(slot: &mut Option<T>, value: T, twice: &str) -> Result<(), Parsed> {
    match slot.replace(value) {
        Some(_) => Err(Parsed::Malformed(twice.to_owned())),
        None => Ok(()),
    }
}

/// `2026-12-01T10:07:37.123Z` (fraction optional, `Z` or `+00:00`) as Unix milliseconds; `None` for any
/// other shape (the time is shown to operators, never used to decide anything).
pub fn iso8601_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let num = |from: usize, to: usize| -> Option<u64> {
        let digits = b.get(from..to)?;
        digits.iter().try_fold(0u64, |acc, d| d.is_ascii_digit().then(|| acc * 10 + u64::from(d - b'0')))
    };
    if b.len() < 20 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let mut rest = s.get(19..)?;
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let (f, after) = fraction.split_at_checked(digits)?;
        // The first three digits, padded: `.5` is 500 ms, `.123456` is 123 ms.
        millis = f.bytes().chain(*b"000").take(3).fold(0, |ms, d| ms * 10 + u64::from(d - b'0'));
        rest = after;
    }
    if !matches!(rest, "Z" | "z" | "+00:00") {
        return None;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let ok = year >= 1970 && (1..=12).contains(&month) && day >= 1 && hour < 24 && minute < 60 && second < 61;
    if !ok || day > *month_days.get(usize::try_from(month - 1).ok()?)? {
        return None;
    }
    // Days since 1970-01-01 (Hinnant's days_from_civil, for years >= 1970 so unsigned).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> Result<HttpResponse, TransportError> {
        Ok(HttpResponse { status: 200, etag: None, body: body.as_bytes().to_vec(), date: None })
    }

    fn page(body: &str) -> ListPage {
        match classify_list("p/cells/", ok(body)) {
            ListAnswer::Page(page) => page,
            other => panic!("{body}: {other:?}"),
        }
    }

    fn keys(page: &ListPage) -> Vec<&str> {
        page.objects.iter().map(|o| o.key.as_str()).collect()
    }

    /// AWS S3 (compact, namespaced, entity-encoded key, Owner/ChecksumAlgorithm children).
    const AWS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/cells/</Prefix><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated><Contents><Key>p/cells/a&amp;b/own.json</Key><LastModified>2026-12-01T10:07:37.000Z</LastModified><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><Size>40</Size><Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID></Owner><StorageClass>STANDARD</StorageClass></Contents><Contents><Key>p/cells/c&#13;/own.json</Key><LastModified>2026-12-01T10:07:38.5Z</LastModified><ETag>"x"</ETag><Size>40</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>"#;

    /// Cloudflare R2 (no Owner, a StartAfter echo, last page).
    const R2: &str = r#"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Contents><Key>p/cells/x/own.json</Key><Size>30</Size><LastModified>2026-12-01T10:00:00.000Z</LastModified><ETag>"e"</ETag><StorageClass>STANDARD</StorageClass></Contents><IsTruncated>false</IsTruncated><MaxKeys>1000</MaxKeys><Prefix>p/cells/</Prefix><KeyCount>1</KeyCount></ListBucketResult>"#;

    /// moto: pretty-printed, whitespace between every element, an empty ContinuationToken echo.
    const MOTO: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n  <Name>b</Name>\n  <Prefix>p/cells/</Prefix>\n  <MaxKeys>1000</MaxKeys>\n  <KeyCount>1</KeyCount>\n  <IsTruncated>false</IsTruncated>\n  <ContinuationToken></ContinuationToken>\n  <Contents>\n    <Key>p/cells/ a b /own.json</Key>\n    <LastModified>2026-12-01T10:00:00.000Z</LastModified>\n    <ETag>&#34;e&#34;</ETag>\n    <Size>30</Size>\n    <StorageClass>STANDARD</StorageClass>\n  </Contents>\n</ListBucketResult>\n";

    /// MinIO: truncated, an opaque token with `+` and `=`, a Delimiter echo and CommonPrefixes.
    const MINIO: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/cells/</Prefix><NextContinuationToken>M2U3Nj+YWQ1=</NextContinuationToken><KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><Delimiter></Delimiter><IsTruncated>true</IsTruncated><Contents><Key>p/cells/m/own.json</Key><LastModified>2026-12-01T10:00:00.123Z</LastModified><ETag>&#34;e&#34;</ETag><Size>30</Size><Owner><ID>02d6176db174dc93cb1b899f7c6078f08654445fe8cf1b6ce98d8855f66bdbf4</ID><DisplayName>minio</DisplayName></Owner><StorageClass>STANDARD</StorageClass></Contents><CommonPrefixes><Prefix>p/cells/q/</Prefix></CommonPrefixes><EncodingType></EncodingType></ListBucketResult>"#;

    /// ministack: an empty listing with a self-closing element.
    const EMPTY: &str = "<?xml version='1.0' encoding='utf-8'?>\n<ListBucketResult><Name>b</Name><Prefix>p/cells/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><StartAfter/></ListBucketResult>";

    #[test]
    fn url_encoded_keys_are_decoded_when_the_answer_says_so() {
        let encoded = "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>p/cells/a%01b+c%2B%C3%A9/own.json</Key></Contents><Contents><Key>p/cells/d/data/e1/x%1B%5D52%3B</Key></Contents><CommonPrefixes><Prefix>p/cells/%01/</Prefix></CommonPrefixes></ListBucketResult>";
        assert_eq!(keys(&page(encoded)), ["p/cells/a\u{1}b c+é/own.json", "p/cells/d/data/e1/x\u{1b}]52;"]);
        // A store that ignores encoding-type: keys as sent.
        assert_eq!(keys(&page("<ListBucketResult><Contents><Key>p/cells/a+b%41/own.json</Key></Contents></ListBucketResult>")), ["p/cells/a+b%41/own.json"]);
        for bad in ["a%4", "a%zz", "%ff"] {
            let body = format!("<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>{bad}</Key></Contents></ListBucketResult>");
            assert!(matches!(classify_list("p/", ok(&body)), ListAnswer::Refused(e) if e.code() == "request"), "{bad}");
        }
    }

    #[test]
    fn real_world_answer_shapes() {
        let aws = page(AWS);
        assert_eq!(keys(&aws), ["p/cells/a&b/own.json", "p/cells/c\r/own.json"]);
        assert_eq!(aws.next.as_deref(), Some("1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="));
        assert_eq!(aws.objects[0].last_modified_ms, Some(1_796_119_657_000));
        assert_eq!(aws.objects[1].last_modified_ms, Some(1_796_119_658_500));
        let r2 = page(R2);
        assert_eq!((keys(&r2), r2.next.clone()), (vec!["p/cells/x/own.json"], None));
        let moto = page(MOTO);
        assert_eq!((keys(&moto), moto.next.clone()), (vec!["p/cells/ a b /own.json"], None));
        let minio = page(MINIO);
        assert_eq!(keys(&minio), ["p/cells/m/own.json"]);
        assert_eq!(minio.next.as_deref(), Some("M2U3Nj+YWQ1="));
        assert_eq!(minio.objects[0].last_modified_ms, Some(1_796_119_200_123));
        assert_eq!(page(EMPTY), ListPage { objects: vec![], next: None });
        // A prefixed namespace, a BOM, leading whitespace.
        let prefixed = "\u{feff}<s3:ListBucketResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\"><s3:Contents><s3:Key>k</s3:Key></s3:Contents></s3:ListBucketResult>";
        assert_eq!(keys(&page(prefixed)), ["k"]);
        assert_eq!(keys(&page(&format!("  \n{R2}"))), ["p/cells/x/own.json"]);
    }

    fn refused(answer: Result<HttpResponse, TransportError>) -> Error {
        match classify_list("p/cells/", answer) {
            ListAnswer::Refused(e) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn answers_that_are_not_a_listing() {
        let cases: &[(&str, &str)] = &[
            ("<!DOCTYPE html><html><body>Welcome to nginx!</body></html>", "not an S3 API: an HTML page"),
            ("<html><head></head></html>", "not an S3 API: an HTML page"),
            ("{\"objects\":[]}", "not an S3 API: a JSON document"),
            ("OK", "not an S3 API: a body that is not XML"),
            ("", "not an S3 API: an empty body"),
            ("<body>hi</body>", "not an S3 API: an HTML page"),
            ("<ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>", "not an S3 API: XML whose root is <ListAllMyBucketsResult>"),
            ("<ListBucketResult><Contents><Key>a</Key>", "malformed ListObjectsV2 answer: <Contents> is never closed"),
            ("<ListBucketResult><Contents><Key>a&b</Key></Contents></ListBucketResult>", "unterminated entity"),
            ("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", "without a <Key>"),
            ("<ListBucketResult><Contents><Key></Key></Contents></ListBucketResult>", "without a <Key>"),
            ("<ListBucketResult><Contents><Key>a</Key><Key>b</Key></Contents></ListBucketResult>", "two <Key>s"),
            ("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "no NextContinuationToken"),
            (
                "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken> </NextContinuationToken></ListBucketResult>",
                "no NextContinuationToken",
            ),
            ("<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>", "not true/false"),
            (
                "<ListBucketResult><IsTruncated>false</IsTruncated><IsTruncated>true</IsTruncated></ListBucketResult>",
                "twice",
            ),
        ];
        for (body, want) in cases {
            let e = refused(ok(body));
            assert_eq!(e.code(), "request", "{body}");
            let text = e.to_string();
            assert!(text.contains(want) && text.contains("list p/cells/*"), "{body}: {text}");
        }
        // An S3 <Error> answered with 200 keeps the store's code and message.
        let e = refused(ok("<Error><Code>InternalError</Code><Message>try again</Message></Error>"));
        assert!(matches!(&e, Error::Request(r) if r.code == "InternalError" && r.message == "try again"), "{e:?}");
    }

    #[test]
    fn statuses_other_than_200() {
        let resp = |status: u16, body: &str| Ok(HttpResponse { status, etag: None, body: body.as_bytes().to_vec(), date: None });
        let xml = |code: &str| format!("<Error><Code>{code}</Code><Message>m</Message></Error>");
        assert_eq!(refused(resp(403, &xml("SignatureDoesNotMatch"))).code(), "auth");
        assert_eq!(refused(resp(403, "<html>denied</html>")).code(), "auth");
        let e = refused(resp(404, &xml("NoSuchBucket")));
        assert!(matches!(&e, Error::Request(r) if r.code == "NoSuchBucket" && r.status == 404), "{e:?}");
        for body in ["", "<html>Not Found</html>"] {
            assert_eq!(refused(resp(404, body)).code(), "request");
        }
        assert_eq!(refused(resp(400, &xml("InvalidArgument"))).code(), "request");
        assert_eq!(refused(resp(301, &xml("PermanentRedirect"))).code(), "request");
        for answer in [resp(503, &xml("SlowDown")), resp(500, ""), resp(429, ""), Err(TransportError::TimedOut)] {
            assert!(matches!(classify_list("p/", answer), ListAnswer::Retryable(_)));
        }
        let net = classify_list("p/", Err(TransportError::Network("ECONNREFUSED".into())));
        assert!(matches!(net, ListAnswer::Retryable(f) if f.detail.contains("ECONNREFUSED")));
    }

    #[test]
    fn last_modified_times() {
        assert_eq!(iso8601_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso8601_ms("2000-03-01T00:00:00.1Z"), Some(951_868_800_100));
        assert_eq!(iso8601_ms("2024-02-29T23:59:59.999999+00:00"), Some(1_709_251_199_999));
        for bad in ["", "2026-12-01", "2026-12-01T10:07:37", "2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
            "2026-12-01T10:07:37.Z", "2026-12-01T10:07:37+01:00", "1969-12-31T23:59:59Z", "2026-12-01T24:00:00Z",
            "２０２６-12-01T10:07:37Z"]
        {
            assert_eq!(iso8601_ms(bad), None, "{bad}");
        }
    }
}
