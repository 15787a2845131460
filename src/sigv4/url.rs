//! A minimal absolute-URL parser for what a signer needs: scheme, `host[:port]` (the Host header value),
//! raw path and raw query. It rejects what it cannot sign faithfully (userinfo, non-http(s) schemes,
//! non-ASCII hosts, control characters that fetch would silently strip) rather than guessing.
//! Must never decode or re-encode anything: that is `path.rs`/`query.rs`'s job.

use alloc::borrow::Cow;

use super::{all_bytes, find_byte};
use crate::error::{msg, Error, Piece, Quoted, Result};

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Url<'a> {
    /// `http` or `https`, lower-case.
    pub scheme: &'static str,
    /// Lower-case host, plus `:port` unless it is the scheme's default: exactly the Host header value.
    /// Borrowed from the URL when that is already what it says (the usual case: no copy).
    pub host: Cow<'a, str>,
    /// As given, from the first `/` up to `?` or `#`; may be empty.
    pub path: &'a str,
    /// As given, between `?` and `#`; empty when absent.
    pub query: &'a str,
}

fn bad(url: &str, why: &str) -> Error {
    Error::invalid(msg!("url ", Quoted(url), " cannot be signed: ", why))
}

pub(crate) fn parse(url: &str) -> Result<Url<'_>> {
    if !all_bytes(url, |b| !b.is_ascii_control()) {
        return Err(bad(url, "contains a control character (percent-encode it)"));
    }
    let (scheme, rest) = super::split_once_str(url, "://")
        .ok_or_else(|| bad(url, "missing scheme"))?;
    let (scheme, default_port) = if scheme.eq_ignore_ascii_case("https") {
        ("https", 443)
    } else if scheme.eq_ignore_ascii_case("http") {
        ("http", 80)
    } else {
        return Err(bad(url, "scheme must be http or https"));
    };
    // One pass finds where the authority ends and whether it is a plain host name (no port, userinfo or
    // IPv6 brackets: the usual case), which then needs no more passes over it.
    let mut authority_end = rest.len();
    let (mut plain, mut upper) = (true, false);
    for (i, &b) in rest.as_bytes().iter().enumerate() {
        match b {
            b'/' | b'?' | b'#' => {
                authority_end = i;
                break;
            }
            b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => {}
            b'A'..=b'Z' => upper = true,
            _ => plain = false,
        }
    }
    // At an ASCII byte or the end, so always a split; checked because slicing's panic path costs wasm.
    let (authority, tail) = rest.split_at_checked(authority_end).unwrap_or((rest, ""));
    let host = if plain && !authority.is_empty() {
        if upper {
            Cow::Owned(authority.to_ascii_lowercase())
        } else {
            Cow::Borrowed(authority)
        }
    } else {
        host_and_port(url, authority, default_port)?
    };
    let tail = split_once_byte(tail, b'#').map_or(tail, |(before, _)| before);
    let (path, query) = split_once_byte(tail, b'?').unwrap_or((tail, ""));
    Ok(Url {
        scheme,
        host,
        path,
        query,
    })
}

/// The Host value of any authority other than a plain host name: with userinfo (refused),
/// a port, or an IPv6 literal.
fn host_and_port<'a>(url: &str, authority: &'a str, default_port: u16) -> Result<Cow<'a, str>> {
    if find_byte(authority.as_bytes(), |b| b == b'@').is_some() {
        // Not echoed: the URL would carry the password into logs.
        return Err(Error::invalid(
            "url holds user credentials (user:password@), which are not supported",
        ));
    }
    let (hostname, port) = split_port(authority).ok_or_else(|| bad(url, "bad port"))?;
    if !valid_hostname(hostname) {
        return Err(bad(url, "missing or invalid host"));
    }
    let port = port.filter(|&p| p != default_port);
    let host = if port.is_none() && all_bytes(hostname, |b| !b.is_ascii_uppercase()) {
        Cow::Borrowed(hostname)
    } else {
        let mut host = hostname.to_ascii_lowercase();
        if let Some(port) = port {
            host.push(':');
            port.push_to(&mut host);
        }
        Cow::Owned(host)
    };
    Ok(host)
}

/// `s.split_once(ascii)` by byte search (a `char` pattern is a slow per-character loop at opt-level "z").
/// An ASCII byte is a whole character, so both sides are on character boundaries.
fn split_once_byte(s: &str, ascii: u8) -> Option<(&str, &str)> {
    let at = find_byte(s.as_bytes(), |b| b == ascii)?;
    Some((s.get(..at)?, s.get(at + 1..)?))
}

/// Splits `host[:port]` / `[v6][:port]`; `None` when the port is present but not 1..=65535 digits.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let colon = if authority.starts_with('[') {
        let close = authority.find(']')?;
        match authority.get(close + 1..)? {
            "" => return Some((authority, None)),
            after if after.starts_with(':') => close + 1,
            _ => return None,
        }
    } else {
        match authority.bytes().rposition(|b| b == b':') {
            Some(i) => i,
            None => return Some((authority, None)),
        }
    };
    let digits = authority.get(colon + 1..)?;
    if digits.is_empty() || digits.len() > 5 || !all_bytes(digits, |b| b.is_ascii_digit()) {
        return None;
    }
    let port: u32 = digits.parse().ok()?;
    let port = u16::try_from(port).ok().filter(|&p| p != 0)?;
    Some((authority.get(..colon)?, Some(port)))
}

/// DNS names/IPv4 (letters, digits, `-`, `.`, `_`) or a bracketed IPv6 literal. No IDNs: those need
/// punycode, which fetch would apply and we would not have signed.
fn valid_hostname(h: &str) -> bool {
    if let Some(inner) = h.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return !inner.is_empty()
            && all_bytes(inner, |b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
    }
    !h.is_empty()
        && all_bytes(h, |b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> (String, String, String) {
        let u = parse(url).unwrap();
        (
            format!("{}://{}", u.scheme, u.host),
            u.path.to_owned(),
            u.query.to_owned(),
        )
    }

    #[test]
    fn splits_the_parts_and_drops_default_ports() {
        let own = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
        assert_eq!(
            ok("https://Bucket.S3.amazonaws.com"),
            own("https://bucket.s3.amazonaws.com", "", "")
        );
        assert_eq!(
            ok("HTTPS://h:443/a/b?x=1#frag"),
            own("https://h", "/a/b", "x=1")
        );
        assert_eq!(ok("http://h:80/"), own("http://h", "/", ""));
        assert_eq!(ok("http://h:443/"), own("http://h:443", "/", ""));
        assert_eq!(
            ok("http://127.0.0.1:9000/b/k"),
            own("http://127.0.0.1:9000", "/b/k", "")
        );
        assert_eq!(
            ok("http://[::1]:9000/b"),
            own("http://[::1]:9000", "/b", "")
        );
        assert_eq!(ok("http://[::1]/b"), own("http://[::1]", "/b", ""));
        assert_eq!(ok("https://h?a=b/c"), own("https://h", "", "a=b/c"));
        assert_eq!(ok("https://h#x?y"), own("https://h", "", ""));
        assert_eq!(ok("https://h/a b/ሴ"), own("https://h", "/a b/ሴ", ""));
    }

    #[test]
    fn rejects_what_it_cannot_sign() {
        for url in [
            "",
            "h/a",
            "//h/a",
            "ftp://h/a",
            "https:/h/a",
            "https:///a",
            "https://",
            "https://user:pw@h/a",
            "https://h:/a",
            "https://h:0/a",
            "https://h:65536/a",
            "https://h:12a/a",
            "https://h:123456/a",
            "https://[::1/a",
            "https://[]/a",
            "https://[::1]x/a",
            "https://bücher.example/a",
            "https://h h/a",
            "https://h/a\nb",
            "https://h/a\tb",
            "https://h/\u{7f}",
        ] {
            let err = parse(url).unwrap_err();
            assert_eq!(err.code(), "invalid-input", "{url:?}");
        }
    }

    #[test]
    fn never_echoes_a_password() {
        let err = parse("https://user:hunter2@h/a").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
