//! URI encoding as SigV4 defines it: every byte except the unreserved set `A-Za-z0-9-._~` becomes `%XX`
//! with upper-case hex. Works on bytes, so any input (even invalid UTF-8 after decoding) is safe.
//! Must never decode `+` as a space: `+` is a literal byte in paths and queries alike (RFC 3986).

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// True for RFC 3986 unreserved bytes, the only ones SigV4 leaves raw.
#[inline]
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

#[inline]
fn push_byte(out: &mut String, b: u8, keep_slash: bool) {
    if is_unreserved(b) || (keep_slash && b == b'/') {
        out.push(b as char);
    } else {
        out.push('%');
        out.push(HEX_UPPER[usize::from(b >> 4)] as char);
        out.push(HEX_UPPER[usize::from(b & 0x0f)] as char);
    }
}

/// Appends `bytes` URI-encoded; `keep_slash` leaves `/` raw (whole paths), otherwise it becomes `%2F`.
pub(crate) fn push_encoded(out: &mut String, bytes: &[u8], keep_slash: bool) {
    for &b in bytes {
        push_byte(out, b, keep_slash);
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends `bytes` decoded once then encoded once: a valid `%XX` is decoded, anything else (including a
/// stray `%`) is taken literally. So an already-encoded input comes out unchanged (modulo hex case and
/// needless escapes like `%41`), and a raw one comes out encoded: encoding is idempotent.
/// `/` is always encoded, so callers pass one path segment or one query key/value at a time.
pub(crate) fn push_reencoded(out: &mut String, bytes: &[u8]) {
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            if let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex_value),
                bytes.get(i + 2).copied().and_then(hex_value),
            ) {
                push_byte(out, (hi << 4) | lo, false);
                i += 3;
                continue;
            }
        }
        push_byte(out, b, false);
        i += 1;
    }
}

/// Lower-case hex of `bytes` (digests and signatures), appended without an intermediate allocation.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX_LOWER[usize::from(b >> 4)] as char);
        out.push(HEX_LOWER[usize::from(b & 0x0f)] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &str, keep_slash: bool) -> String {
        let mut out = String::new();
        push_encoded(&mut out, s.as_bytes(), keep_slash);
        out
    }

    fn re(s: &str) -> String {
        let mut out = String::new();
        push_reencoded(&mut out, s.as_bytes());
        out
    }

    #[test]
    fn unreserved_stay_raw_everything_else_is_upper_hex() {
        assert_eq!(enc("AZaz09-._~", false), "AZaz09-._~");
        assert_eq!(enc("a b+c/d%", false), "a%20b%2Bc%2Fd%25");
        assert_eq!(enc("a b/c", true), "a%20b/c");
        assert_eq!(enc("ሴ", false), "%E1%88%B4");
    }

    #[test]
    fn reencoding_is_idempotent_and_encodes_raw_input_once() {
        assert_eq!(re("a b+c"), "a%20b%2Bc");
        assert_eq!(re("a%20b%2Bc"), "a%20b%2Bc");
        assert_eq!(re(&re("x y=z&ሴ")), re("x y=z&ሴ"));
        // lower-case hex and needless escapes are normalized
        assert_eq!(re("%2b%41"), "%2BA");
        // a stray or truncated escape is a literal percent sign
        assert_eq!(re("100%"), "100%25");
        assert_eq!(re("%zz%4"), "%25zz%254");
        // an encoded slash stays inside its segment
        assert_eq!(re("a%2Fb"), "a%2Fb");
        // invalid UTF-8 after decoding is fine: bytes in, bytes out
        assert_eq!(re("%FF"), "%FF");
    }

    #[test]
    fn hex_is_lower_case() {
        let mut out = String::new();
        push_hex(&mut out, &[0x00, 0xab, 0xff]);
        assert_eq!(out, "00abff");
    }
}
