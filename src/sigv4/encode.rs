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

/// Appends ASCII bytes. Pushing them as one `str` instead of char by char matters at opt-level "z",
/// where `String::push` stays an out-of-line UTF-8 encoder.
fn push_ascii(out: &mut String, ascii: &[u8]) {
    // Callers pass ASCII only, so this never falls back to the empty string.
    out.push_str(core::str::from_utf8(ascii).unwrap_or_default());
}

fn push_escape(out: &mut String, b: u8) {
    push_ascii(out, &[b'%', HEX_UPPER[usize::from(b >> 4)], HEX_UPPER[usize::from(b & 0x0f)]]);
}

/// Appends `bytes` URI-encoded; `keep_slash` leaves `/` raw (whole paths), otherwise it becomes `%2F`.
pub(crate) fn push_encoded(out: &mut String, bytes: &[u8], keep_slash: bool) {
    let raw = |b: u8| is_unreserved(b) || (keep_slash && b == b'/');
    let mut rest = bytes;
    while !rest.is_empty() {
        // The longest run of bytes that stay as they are, in one piece; then one escape.
        let run = super::find_byte(rest, |b| !raw(b)).unwrap_or(rest.len());
        push_ascii(out, &rest[..run]);
        match rest.get(run) {
            Some(&b) => {
                push_escape(out, b);
                rest = &rest[run + 1..];
            }
            None => rest = &[],
        }
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
                push_encoded(out, &[(hi << 4) | lo], false);
                i += 3;
                continue;
            }
        }
        // Up to the next `%` (or past a stray one), bytes are encoded as they are.
        let run = super::find_byte(&bytes[i + 1..], |b| b == b'%').map_or(bytes.len(), |n| i + 1 + n);
        push_encoded(out, &bytes[i..run], false);
        i = run;
    }
}

/// Lower-case hex of `bytes` (digests and signatures), appended without an intermediate allocation.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.chunks(32) {
        let mut buf = [0u8; 64];
        for (pair, &b) in buf.chunks_exact_mut(2).zip(chunk) {
            pair[0] = HEX_LOWER[usize::from(b >> 4)];
            pair[1] = HEX_LOWER[usize::from(b & 0x0f)];
        }
        push_ascii(out, &buf[..chunk.len() * 2]);
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
