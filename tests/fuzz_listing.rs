#![cfg(not(target_arch = "wasm32"))]
//! Property-based fuzzing (proptest) of the ListObjectsV2 reader: arbitrary bytes, XML-ish fragments and
//! mutated real pages. For every input: no panic (a panic kills the wasm instance), a typed error for what
//! is malformed, and for well-formed pages exactly the keys written, entity-decoded, in order.

use celld_edge::env::HttpResponse;
use celld_edge::s3::list::{classify_list, ListAnswer};
use proptest::prelude::*;

fn answer(body: Vec<u8>) -> ListAnswer {
    classify_list("cells/", Ok(HttpResponse { status: 200, etag: None, body, date: None }))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A page holding `keys`, truncated with `token` when given.
fn page(keys: &[String], token: Option<&str>) -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    xml += &format!("<IsTruncated>{}</IsTruncated>", token.is_some());
    if let Some(t) = token {
        xml += &format!("<NextContinuationToken>{}</NextContinuationToken>", escape(t));
    }
    for k in keys {
        xml += &format!("\n  <Contents><Key>{}</Key><LastModified>2026-12-01T10:00:00.000Z</LastModified></Contents>", escape(k));
    }
    xml + "</ListBucketResult>"
}

/// Key text XML 1.0 can hold raw (no C0 controls but tab/CR/LF), with the characters that need escaping.
fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 &<>\"'/:$._\u{e9}\u{1f600}-]{1,40}"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_are_a_page_or_a_typed_error(body in prop::collection::vec(any::<u8>(), 0..400)) {
        match answer(body) {
            ListAnswer::Page(_) => {}
            ListAnswer::Refused(e) => prop_assert_eq!(e.code(), "request"),
            ListAnswer::Retryable { .. } => prop_assert!(false, "a 200 is never retryable"),
        }
    }

    #[test]
    fn xml_ish_fragments_never_panic(parts in prop::collection::vec(prop::sample::select(vec![
        "<ListBucketResult>", "</ListBucketResult>", "<Contents>", "</Contents>", "<Key>", "</Key>", "k", "&amp;",
        "&#13;", "&#xD800;", "&", "<", ">", "<![CDATA[x]]>", "<!--c-->", "<?x?>", "<a/>", "<IsTruncated>", "true",
        "</IsTruncated>", "<NextContinuationToken>", "</NextContinuationToken>", " ", "\n", "\u{0}", "<s3:Key>",
        "</s3:Key>", "<a b=\"c\">", "</a>",
    ]), 0..40)) {
        let _ = answer(parts.concat().into_bytes());
    }

    #[test]
    fn well_formed_pages_give_exactly_their_keys(keys in prop::collection::vec(key(), 0..20), token in prop::option::of("[A-Za-z0-9+/=&]{1,30}")) {
        let body = page(&keys, token.as_deref());
        match answer(body.clone().into_bytes()) {
            ListAnswer::Page(p) => {
                prop_assert_eq!(p.objects.iter().map(|o| o.key.clone()).collect::<Vec<_>>(), keys);
                prop_assert_eq!(p.next, token);
                prop_assert!(p.objects.iter().all(|o| o.last_modified_ms == Some(1_796_119_200_000)));
            }
            other => prop_assert!(false, "{body}: {other:?}"),
        }
    }

    #[test]
    fn a_truncated_page_is_never_read_as_a_smaller_whole(keys in prop::collection::vec(key(), 1..10), cut in 0usize..2000) {
        // Any prefix of a real page (a transfer cut short) is refused, never a page with fewer keys.
        let body = page(&keys, None);
        let cut = cut % body.len();
        let truncated = body.as_bytes()[..cut].to_vec();
        if let ListAnswer::Page(p) = answer(truncated) {
            prop_assert!(false, "a page cut at {cut} of {} read as {p:?}", body.len());
        }
    }
}
