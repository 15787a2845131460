//! The canonical URI. Two rule sets, chosen by service:
//! - S3: every segment decoded once then encoded once, nothing else touched (`//`, `.`, `..` are part of
//!   object keys). The result is also the path to send, so the wire and the signature always agree.
//! - Every other service (AWS's published suite): the path as given is normalized (empty and `.` segments
//!   dropped, `..` pops) and then encoded once more, so an already-encoded path ends up double-encoded.
//!
//! Must never normalize an S3 path, and never decode a generic one.

use super::{all_bytes, split_ascii};
use super::encode::{is_unreserved, push_encoded, push_reencoded};

/// Appends the S3 canonical (and wire) path; an empty path is `/`.
pub(crate) fn push_s3(out: &mut String, raw: &str) {
    if raw.is_empty() {
        out.push('/');
        return;
    }
    // The usual key needs no escape at all: then the path is its own encoding, appended in one piece.
    if all_bytes(raw, |b| b == b'/' || is_unreserved(b)) {
        out.push_str(raw);
        return;
    }
    for (i, segment) in split_ascii(raw, |b| b == b'/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        push_reencoded(out, segment.as_bytes());
    }
}

/// What WHATWG URL parsing (so fetch) takes a path segment for: `Some(false)` a `.` segment, `Some(true)`
/// a `..` one (each dot may be written `%2e` or `%2E`), `None` any other.
pub(crate) fn dot_segment(segment: &str) -> Option<bool> {
    let dot = |s: &str| s == "." || s.eq_ignore_ascii_case("%2e");
    match segment.len() {
        1 | 3 if dot(segment) => Some(false),
        2 | 4 | 6 => {
            let split = |at| segment.get(..at).zip(segment.get(at..));
            let two = |(a, b): (&str, &str)| dot(a) && dot(b);
            (split(1).is_some_and(two) || split(3).is_some_and(two)).then_some(true)
        }
        _ => None,
    }
}

/// Appends the generic-service canonical path: normalized as botocore and AWS's suite do (and as fetch
/// does: a `%2E` dot counts), then encoded with `/` kept.
pub(crate) fn push_generic(out: &mut String, raw: &str) {
    let mut kept: Vec<&str> = Vec::new();
    for segment in split_ascii(raw, |b| b == b'/') {
        match dot_segment(segment) {
            _ if segment.is_empty() => {}
            Some(false) => {}
            Some(true) => {
                kept.pop();
            }
            None => kept.push(segment),
        }
    }
    out.push('/');
    for (i, segment) in kept.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        push_encoded(out, segment.as_bytes(), false);
    }
    if raw.ends_with('/') && !kept.is_empty() {
        out.push('/');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(raw: &str) -> String {
        let mut out = String::new();
        push_s3(&mut out, raw);
        out
    }

    fn generic(raw: &str) -> String {
        let mut out = String::new();
        push_generic(&mut out, raw);
        out
    }

    #[test]
    fn s3_encodes_each_segment_exactly_once_and_keeps_dots_and_slashes() {
        assert_eq!(s3(""), "/");
        assert_eq!(s3("/"), "/");
        assert_eq!(s3("/bucket/a b+c"), "/bucket/a%20b%2Bc");
        assert_eq!(s3("/bucket/a%20b%2Bc"), "/bucket/a%20b%2Bc");
        assert_eq!(s3("/b/test$file.text"), "/b/test%24file.text");
        assert_eq!(s3("/b//x/./y/../z/"), "/b//x/./y/../z/");
        assert_eq!(s3("/b/ሴ~"), "/b/%E1%88%B4~");
        assert_eq!(s3("/b/a%2Fb"), "/b/a%2Fb");
        assert_eq!(s3("/b/50%"), "/b/50%25");
    }

    #[test]
    fn generic_normalizes_then_encodes_again() {
        assert_eq!(generic(""), "/");
        assert_eq!(generic("/"), "/");
        assert_eq!(generic("//example//"), "/example/");
        assert_eq!(generic("/example1/example2/../.."), "/");
        assert_eq!(generic("/example/.."), "/");
        assert_eq!(generic("/./example"), "/example");
        assert_eq!(generic("/../../a/./b/"), "/a/b/");
        assert_eq!(generic("/a/b/.."), "/a");
        assert_eq!(generic("/example space/"), "/example%20space/");
        assert_eq!(generic("/a%20b"), "/a%2520b");
        assert_eq!(generic("/ሴ"), "/%E1%88%B4");
        assert_eq!(generic("/a/b/%2E%2e/c/%2e/d/.%2E/e"), "/a/c/e");
    }

    #[test]
    fn dot_segments_are_those_url_parsing_resolves() {
        for (segment, want) in [
            (".", Some(false)),
            ("%2e", Some(false)),
            ("%2E", Some(false)),
            ("..", Some(true)),
            (".%2e", Some(true)),
            ("%2E.", Some(true)),
            ("%2e%2E", Some(true)),
            ("", None),
            ("...", None),
            ("%2e%2e%2e", None),
            ("a.", None),
            ("%2f", None),
            ("%2e.%2e", None),
            ("é.", None),
        ] {
            assert_eq!(dot_segment(segment), want, "{segment:?}");
        }
    }
}
