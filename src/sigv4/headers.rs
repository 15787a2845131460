//! Canonical headers: names lower-cased, values trimmed with inner runs of spaces/tabs folded to one
//! space, repeated names joined with `,` in the order given, sorted by name. Headers that proxies and
//! runtimes add or rewrite are passed through unsigned, and names the signer owns are refused.
//! Must never sign a value other than the one it returns for sending.

use super::all_bytes;
use crate::error::{Error, Result};

/// Hop-by-hop or runtime-controlled headers: signing them would break as soon as something rewrites them.
fn is_unsigned(lower: &str) -> bool {
    matches!(
        lower,
        "user-agent"
            | "content-length"
            | "expect"
            | "connection"
            | "keep-alive"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "x-amzn-trace-id"
    ) || lower.starts_with("proxy-")
}

/// Set from the URL, the datetime or the credentials; a caller copy would be a second, conflicting one.
fn is_reserved(lower: &str) -> bool {
    matches!(
        lower,
        "host" | "authorization" | "x-amz-date" | "x-amz-security-token"
    )
}

/// RFC 9110 `tchar`. A `match`, not `b"!#$…".contains(&b)`: at opt-level "z" that is a `memchr` call
/// per byte of every header name.
pub(crate) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(b, b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// Trims spaces/tabs and folds inner runs of them into one space.
/// A value that needs neither (the usual case) is appended in one piece; otherwise word by word rather
/// than char by char (`String::push` is slow where it is not inlined, at opt-level "z").
fn push_trimmed(out: &mut String, value: &str) {
    let b = value.as_bytes();
    // One loop (no `memchr` call, no `windows`): no tab, no space at either end, no two spaces in a row.
    let mut clean = b.first() != Some(&b' ') && b.last() != Some(&b' ');
    let mut prev = 0u8;
    for &c in b {
        if c == b'\t' || (c == b' ' && prev == b' ') {
            clean = false;
            break;
        }
        prev = c;
    }
    if clean {
        out.push_str(value);
        return;
    }
    for (i, word) in super::split_ascii(value, |b| b == b' ' || b == b'\t').filter(|w| !w.is_empty()).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
}

/// Appends the lower-cased name of a valid header to `out`, or says why it is not one.
pub(crate) fn push_checked_name(out: &mut String, name: &str) -> Result<()> {
    if name.is_empty() || !all_bytes(name, is_token_byte) {
        return Err(Error::invalid_value("header name ", name, " is not a valid HTTP token"));
    }
    out.push_str(name);
    out.make_ascii_lowercase();
    Ok(())
}

/// Checks a header value: ASCII only (fetch sends Latin-1 bytes we would not have signed), and no
/// control characters except tab (CR/LF would split the header).
pub(crate) fn check_value(name: &str, value: &str) -> Result<()> {
    if all_bytes(value, |b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        Ok(())
    } else {
        Err(Error::invalid_value("header ", name, " has a value with a control or non-ASCII character"))
    }
}

/// The request's headers, split into what is signed and what is only passed along. The `Signer` keeps
/// one and refills it for every request, so the name and value strings are reused, not allocated anew.
#[derive(Default)]
pub(crate) struct Headers {
    /// Lower-case names and canonical values; sorted and merged once `finish` ran.
    pub signed: Vec<(String, String)>,
    /// Lower-case names and values as given.
    pub unsigned: Vec<(String, String)>,
    /// The previous request's pairs, for reuse.
    spare: Vec<(String, String)>,
}

impl Headers {
    /// Validates and classifies the caller's headers into fresh `Headers`.
    #[cfg(test)]
    fn collect(given: &[(String, String)]) -> Result<Self> {
        let mut headers = Headers::default();
        headers.fill(given)?;
        Ok(headers)
    }

    /// Validates and classifies the caller's headers, replacing what `self` held.
    pub(crate) fn fill(&mut self, given: &[(String, String)]) -> Result<()> {
        self.spare.append(&mut self.signed);
        self.spare.append(&mut self.unsigned);
        for (name, value) in given {
            let mut pair = self.take();
            push_checked_name(&mut pair.0, name)?;
            check_value(name, value)?;
            let lower = pair.0.as_str();
            if is_reserved(lower) {
                return Err(Error::invalid_value("header ", name, " is set by the signer; pass it through the URL, datetime or credentials"));
            }
            if is_unsigned(lower) {
                pair.1.push_str(value);
                self.unsigned.push(pair);
            } else {
                push_trimmed(&mut pair.1, value);
                self.signed.push(pair);
            }
        }
        Ok(())
    }

    /// Adds a signed header of the signer's own (`name` lower-case, `value` canonical).
    pub(crate) fn push_signed(&mut self, name: &str, value: &str) {
        let mut pair = self.take();
        pair.0.push_str(name);
        pair.1.push_str(value);
        self.signed.push(pair);
    }

    /// An empty pair, reusing a spare one's strings when there is one.
    fn take(&mut self) -> (String, String) {
        let mut pair = self.spare.pop().unwrap_or_default();
        pair.0.clear();
        pair.1.clear();
        pair
    }

    /// Sorts by name (stable, so repeated names keep their order) and joins repeats with `,`.
    pub(crate) fn finish(&mut self) {
        super::sort_small(&mut self.signed, |a, b| a.0 < b.0);
        self.signed.dedup_by(|later, kept| {
            if later.0 == kept.0 {
                kept.1.push(',');
                kept.1.push_str(&later.1);
                true
            } else {
                false
            }
        });
    }

    /// The signed headers in canonical order with `host` (which is signed but never returned, so it is
    /// not stored) merged in at its place. Call after `finish`.
    fn with_host<'s>(&'s self, host: &'s str) -> impl Iterator<Item = (&'s str, &'s str)> {
        let split = self.signed.partition_point(|(n, _)| n.as_str() < "host");
        let (before, after) = self.signed.split_at(split);
        let pair = |(n, v): &'s (String, String)| (n.as_str(), v.as_str());
        before
            .iter()
            .map(pair)
            .chain(core::iter::once(("host", host)))
            .chain(after.iter().map(pair))
    }

    /// Appends `name:value\n` for every signed header, `host` included.
    pub(crate) fn push_canonical(&self, out: &mut String, host: &str) {
        for (name, value) in self.with_host(host) {
            out.push_str(name);
            out.push(':');
            out.push_str(value);
            out.push('\n');
        }
    }

    /// Appends the `;`-joined signed header names, `host` included.
    pub(crate) fn push_names(&self, out: &mut String, host: &str) {
        for (i, (name, _)) in self.with_host(host).enumerate() {
            if i > 0 {
                out.push(';');
            }
            out.push_str(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn canonical(pairs: &[(&str, &str)]) -> (String, String) {
        let mut headers = Headers::collect(&h(pairs)).unwrap();
        headers.finish();
        let (mut c, mut n) = (String::new(), String::new());
        headers.push_canonical(&mut c, "h.example");
        headers.push_names(&mut n, "h.example");
        (c, n)
    }

    #[test]
    fn lower_cases_trims_folds_merges_and_sorts() {
        let (c, n) = canonical(&[
            ("My-Header2", "  \"a   b \t c\"  "),
            ("my-header1", "value4"),
            ("MY-HEADER1", " value1 "),
            ("Content-Type", "text/plain"),
            ("my-header1", ""),
        ]);
        assert_eq!(
            c,
            "content-type:text/plain\nhost:h.example\nmy-header1:value4,value1,\nmy-header2:\"a b c\"\n"
        );
        assert_eq!(n, "content-type;host;my-header1;my-header2");
    }

    #[test]
    fn rewritten_headers_pass_through_unsigned() {
        let given = h(&[
            ("User-Agent", "x  y"),
            ("Content-Length", "3"),
            ("Proxy-Authorization", "p"),
            ("Range", "bytes=0-9"),
        ]);
        let headers = Headers::collect(&given).unwrap();
        assert_eq!(headers.signed, h(&[("range", "bytes=0-9")]));
        assert_eq!(
            headers.unsigned,
            h(&[
                ("user-agent", "x  y"),
                ("content-length", "3"),
                ("proxy-authorization", "p")
            ])
        );
    }

    #[test]
    fn rejects_bad_names_values_and_signer_owned_names() {
        for (name, value) in [
            ("", "v"),
            ("a b", "v"),
            ("a:b", "v"),
            ("ä", "v"),
            ("x", "a\r\nb: c"),
            ("x", "a\nb"),
            ("x", "a\0"),
            ("x", "caf\u{e9}"),
            ("Host", "example.com"),
            ("Authorization", "x"),
            ("X-Amz-Date", "20150830T123600Z"),
            ("x-amz-security-token", "t"),
        ] {
            let err = Headers::collect(&h(&[(name, value)])).err().expect(name);
            assert_eq!(err.code(), "invalid-input");
        }
    }
}
