//! A minimal absolute-URL parser for what a signer needs: scheme, `host[:port]` (the Host header value),
//! raw path and raw query. It rejects what it cannot sign faithfully (userinfo, non-http(s) schemes,
//! non-ASCII hosts, control characters that fetch would silently strip, a `\` that fetch reads as `/`)
//! rather than guessing. An IP address host is written the way WHATWG URL parsing (fetch) serialises it
//! (`127.1` and `0x7f000001` are `127.0.0.1`, `[::ffff:127.0.0.1]` is `[::ffff:7f00:1]`), since that is
//! the Host fetch sends. Must never decode or re-encode the path or query: that is `path.rs`/`query.rs`'s
//! job. Errors never quote the URL as given (`shown`): it may hold a password or a presigned token.

use std::borrow::Cow;

use super::{all_bytes, find_byte, split_ascii, split_once_byte};
use crate::error::{joined, Error, Result};

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
    Error::invalid_value("url ", &shown(url), &joined(&[" cannot be signed: ", why]))
}

/// A URL as messages may show it: without query and fragment (a presigned signature and token), and
/// without anything up to its last `@` (a password), whatever else is wrong with it (no scheme, another
/// scheme, a control character: `Quoted` escapes those).
pub(crate) fn shown(url: &str) -> String {
    let end = find_byte(url.as_bytes(), |b| b == b'?' || b == b'#').unwrap_or(url.len());
    let url = url.get(..end).unwrap_or("");
    match url.bytes().rposition(|b| b == b'@') {
        Some(at) => joined(&["…@", url.get(at + 1..).unwrap_or("")]),
        None => url.to_owned(),
    }
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
    let host = if plain && !authority.is_empty() && !ends_in_number(authority) {
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
    if find_byte(path.as_bytes(), |b| b == b'\\').is_some() {
        return Err(bad(url, "its path holds a '\\', which fetch sends as '/' (percent-encode it: %5C)"));
    }
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
    // An IP address as fetch will send it (WHATWG URL's serialisation).
    let address = if hostname.starts_with('[') {
        Some(ipv6(hostname).ok_or_else(|| bad(url, "invalid IPv6 address"))?)
    } else if ends_in_number(hostname) {
        Some(ipv4(hostname).ok_or_else(|| bad(url, "its host ends in a number but is not an IPv4 address"))?)
    } else {
        None
    };
    let port = port.filter(|&p| p != default_port);
    let host = if address.is_none() && port.is_none() && all_bytes(hostname, |b| !b.is_ascii_uppercase()) {
        Cow::Borrowed(hostname)
    } else {
        let mut host = address.unwrap_or_else(|| hostname.to_ascii_lowercase());
        if let Some(port) = port {
            host.push(':');
            super::push_decimal(&mut host, u64::from(port));
        }
        Cow::Owned(host)
    };
    Ok(host)
}

/// WHATWG URL's "ends in a number" test: a host whose last label (one trailing dot aside) is decimal
/// digits or `0x` hex is an IPv4 address to URL parsing, however it is written.
fn ends_in_number(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    let last = match host.bytes().rposition(|b| b == b'.') {
        Some(dot) => host.get(dot + 1..).unwrap_or(""),
        None => host,
    };
    if !last.is_empty() && all_bytes(last, |b| b.is_ascii_digit()) {
        return true;
    }
    match last.strip_prefix("0x").or_else(|| last.strip_prefix("0X")) {
        Some(hex) => all_bytes(hex, |b| b.is_ascii_hexdigit()),
        None => false,
    }
}

/// WHATWG URL's IPv4 parser and serialiser: one to four parts, each decimal, octal (leading `0`) or hex
/// (`0x`), the last filling the remaining bytes; `None` where URL parsing fails.
fn ipv4(host: &str) -> Option<String> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let mut numbers = [0u64; 4];
    let mut count = 0;
    for part in split_ascii(host, |b| b == b'.') {
        let slot = numbers.get_mut(count)?;
        let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (part.get(1..)?, 8)
        } else {
            (part, 10)
        };
        *slot = if digits.is_empty() {
            if part.is_empty() {
                return None;
            }
            0
        } else {
            // More than 2^32 in any part fails below; 12 digits bound the parse well inside u64.
            if digits.len() > 12 {
                return None;
            }
            u64::from_str_radix(digits, radix).ok()?
        };
        count += 1;
    }
    let (last, first) = numbers.get(..count)?.split_last()?;
    if first.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (5 - count)) {
        return None;
    }
    let mut address = *last;
    for (i, &n) in first.iter().enumerate() {
        address += n << (8 * (3 - i));
    }
    let mut out = String::with_capacity(15);
    for shift in [24, 16, 8, 0] {
        if shift != 24 {
            out.push('.');
        }
        super::push_decimal(&mut out, (address >> shift) & 0xff);
    }
    Some(out)
}

/// WHATWG URL's IPv6 parser and serialiser for a bracketed literal (lower-case hex, no leading zeros,
/// the first longest run of two or more zero pieces as `::`, an embedded IPv4 part as hex); `None` where
/// URL parsing fails.
fn ipv6(bracketed: &str) -> Option<String> {
    let inner = bracketed.strip_prefix('[')?.strip_suffix(']')?;
    let mut pieces = [0u16; 8];
    let mut at = 0;
    let mut compress = None;
    let mut rest = inner;
    if let Some(after) = rest.strip_prefix("::") {
        compress = Some(0);
        rest = after;
    } else if rest.starts_with(':') {
        return None;
    }
    while !rest.is_empty() {
        if at == 8 {
            return None;
        }
        if let Some(after) = rest.strip_prefix(':') {
            if compress.is_some() {
                return None;
            }
            compress = Some(at);
            rest = after;
            continue;
        }
        let len = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        if rest.as_bytes().get(len) == Some(&b'.') {
            // The last 32 bits as dotted decimal: exactly four parts, no leading zeros.
            if at > 6 {
                return None;
            }
            let mut parts = split_ascii(rest, |b| b == b'.');
            let mut value = 0u32;
            for _ in 0..4 {
                let part = parts.next()?;
                if part.is_empty() || part.len() > 3 || !all_bytes(part, |b| b.is_ascii_digit()) || (part.len() > 1 && part.starts_with('0')) {
                    return None;
                }
                let n: u32 = part.parse().ok()?;
                if n > 255 {
                    return None;
                }
                value = (value << 8) | n;
            }
            if parts.next().is_some() {
                return None;
            }
            *pieces.get_mut(at)? = (value >> 16) as u16;
            *pieces.get_mut(at + 1)? = value as u16;
            at += 2;
            break;
        }
        if len == 0 || len > 4 {
            return None;
        }
        *pieces.get_mut(at)? = u16::from_str_radix(rest.get(..len)?, 16).ok()?;
        at += 1;
        rest = rest.get(len..)?;
        // A `:` separates pieces; a second one right after it is the `::` the loop's top takes.
        if let Some(after) = rest.strip_prefix(':') {
            if after.is_empty() {
                return None;
            }
            rest = after;
        }
    }
    match compress {
        Some(c) => {
            let moved = at - c;
            pieces.copy_within(c..at, 8 - moved);
            for p in pieces.get_mut(c..8 - moved)? {
                *p = 0;
            }
        }
        None if at != 8 => return None,
        None => {}
    }
    // The first longest run of zero pieces, if longer than one.
    let (mut best, mut best_len, mut i) = (8, 1, 0);
    while i < 8 {
        let len = pieces.get(i..)?.iter().take_while(|&&p| p == 0).count();
        if len > best_len {
            (best, best_len) = (i, len);
        }
        i += len.max(1);
    }
    let mut out = String::with_capacity(41);
    out.push('[');
    let mut i = 0;
    while i < 8 {
        if i == best {
            out.push_str(if i == 0 { "::" } else { ":" });
            i += best_len;
            continue;
        }
        push_hex16(&mut out, *pieces.get(i)?);
        i += 1;
        if i < 8 {
            out.push(':');
        }
    }
    out.push(']');
    Some(out)
}

/// Lower-case hex without leading zeros.
fn push_hex16(out: &mut String, n: u16) {
    let mut started = false;
    for shift in [12, 8, 4, 0] {
        let d = (n >> shift) & 0xf;
        if d != 0 || started || shift == 0 {
            started = true;
            out.push(char::from(b"0123456789abcdef"[d as usize]));
        }
    }
}

/// Splits `host[:port]` / `[v6][:port]`; `None` when the port is present but not 1..=65535 digits.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let colon = if authority.starts_with('[') {
        let close = find_byte(authority.as_bytes(), |b| b == b']')?;
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

    #[test]
    fn never_echoes_a_password_or_token_when_another_check_fails_first() {
        for url in [
            "https://user:hunter2@h/a\nb?X-Amz-Security-Token=tok3n",
            "ftp://user:hunter2@h/a?X-Amz-Signature=tok3n",
            "user:hunter2@h/a?X-Amz-Security-Token=tok3n",
            "https:/user:hunter2@h/a#tok3n",
            "https://h:99999/a?X-Amz-Security-Token=tok3n",
            "https://h/a\\b?tok3n",
        ] {
            let err = parse(url).unwrap_err().to_string();
            assert!(!err.contains("hunter2") && !err.contains("tok3n"), "{url:?}: {err}");
        }
        assert_eq!(shown("ftp://u:p@h/a\u{1b}]52;c;x\u{7}?q"), "…@h/a\u{1b}]52;c;x\u{7}");
    }

    #[test]
    fn ip_addresses_are_signed_as_fetch_sends_them() {
        for (given, host) in [
            ("http://127.1:9000/b", "127.0.0.1:9000"),
            ("http://0x7f000001/b", "127.0.0.1"),
            ("http://0X7F.1/b", "127.0.0.1"),
            ("http://0177.0.0.1/b", "127.0.0.1"),
            ("http://127.0.0.1./b", "127.0.0.1"),
            ("http://4294967295/", "255.255.255.255"),
            ("http://0x/", "0.0.0.0"),
            ("http://10.0.0.1/", "10.0.0.1"),
            ("http://[::ffff:127.0.0.1]:9000/b", "[::ffff:7f00:1]:9000"),
            ("http://[0:0:0:0:0:0:0:1]/", "[::1]"),
            ("http://[2001:DB8::0001]/", "[2001:db8::1]"),
            ("http://[1:0:0:2:0:0:0:3]/", "[1:0:0:2::3]"),
            ("http://[1:0:0:2:3:4:5:6]/", "[1::2:3:4:5:6]"),
            ("http://[1:2:3:4:5:6:7:0]/", "[1:2:3:4:5:6:7:0]"),
            ("http://[1::]/", "[1::]"),
            ("http://[::]/", "[::]"),
            ("http://[::1]/", "[::1]"),
            ("http://s3.example.com/", "s3.example.com"),
            ("http://v1.example/", "v1.example"),
        ] {
            assert_eq!(parse(given).map(|u| u.host.into_owned()), Ok(host.to_owned()), "{given}");
        }
        for url in [
            "http://256.0.0.1/",
            "http://1.2.3.4.5/",
            "http://1..2/",
            "http://08/",
            "http://4294967296/",
            "http://a_b.1/",
            "http://[1:2:3:4:5:6:7:8:9]/",
            "http://[1:2:3:4:5:6:7]/",
            "http://[1::2::3]/",
            "http://[:1]/",
            "http://[1:]/",
            "http://[::1.2.3]/",
            "http://[::01.2.3.4]/",
            "http://[::12345]/",
        ] {
            assert_eq!(parse(url).map(|u| u.host.into_owned()).map_err(|e| e.code()), Err("invalid-input"), "{url}");
        }
    }
}
