//! The canonical query string: each key and value decoded once then encoded once, pairs sorted by key
//! then value (byte order of the encoded forms), a missing value written as `key=`. Repeated keys are
//! all kept. `+` is a literal plus (RFC 3986), never a space. Empty `&&` pieces carry no parameter and
//! are dropped. Must never reorder or drop what it sends without signing exactly that.

use super::encode::{push_encoded, push_reencoded};

/// One query parameter, already in canonical encoding.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub key: String,
    pub value: String,
    /// Whether the caller wrote `=`: `?uploads` is sent as given, though signed as `uploads=`.
    has_eq: bool,
}

impl Param {
    /// A parameter whose key and value are raw strings (encoded here), e.g. `X-Amz-Credential`.
    pub(crate) fn raw(key: &str, value: &str) -> Self {
        let mut k = String::with_capacity(key.len());
        push_encoded(&mut k, key.as_bytes(), false);
        let mut v = String::with_capacity(value.len() + 16);
        push_encoded(&mut v, value.as_bytes(), false);
        Param {
            key: k,
            value: v,
            has_eq: true,
        }
    }
}

/// Parses a raw query (no leading `?`) into canonically encoded parameters, in the order given.
pub(crate) fn parse(raw: &str) -> Vec<Param> {
    let mut params = Vec::new();
    for piece in super::split_ascii(raw, |b| b == b'&').filter(|p| !p.is_empty()) {
        let (key, value, has_eq) = match super::split_once_byte(piece, b'=') {
            Some((k, v)) => (k, v, true),
            None => (piece, "", false),
        };
        let mut k = String::with_capacity(key.len());
        push_reencoded(&mut k, key.as_bytes());
        let mut v = String::with_capacity(value.len());
        push_reencoded(&mut v, value.as_bytes());
        params.push(Param {
            key: k,
            value: v,
            has_eq,
        });
    }
    params
}

/// Appends the parameters in the order given, as they go on the wire.
pub(crate) fn push_wire(out: &mut String, params: &[Param]) {
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(&p.key);
        if p.has_eq {
            out.push('=');
            out.push_str(&p.value);
        }
    }
}

/// Appends the canonical query string (sorted by key, then value).
pub(crate) fn push_canonical(out: &mut String, params: &[Param]) {
    let mut sorted: Vec<&Param> = params.iter().collect();
    super::sort_small(&mut sorted, |a, b| (&a.key, &a.value) < (&b.key, &b.value));
    for (i, p) in sorted.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(&p.key);
        out.push('=');
        out.push_str(&p.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(raw: &str) -> String {
        let mut out = String::new();
        push_canonical(&mut out, &parse(raw));
        out
    }

    fn wire(raw: &str) -> String {
        let mut out = String::new();
        push_wire(&mut out, &parse(raw));
        out
    }

    #[test]
    fn sorts_by_key_then_value_and_keeps_repeats_and_empties() {
        assert_eq!(canonical(""), "");
        assert_eq!(
            canonical("Param2=value2&Param1=value1"),
            "Param1=value1&Param2=value2"
        );
        assert_eq!(
            canonical("Param1=value2&Param1=value1"),
            "Param1=value1&Param1=value2"
        );
        assert_eq!(canonical("b&a=&c=1&&a"), "a=&a=&b=&c=1");
        // upper-case sorts before lower-case (byte order)
        assert_eq!(canonical("a=1&B=2"), "B=2&a=1");
        // sorting happens on the encoded form: `%20` (0x25) sorts before `-` (0x2D)
        assert_eq!(canonical("a-=1&a =2"), "a%20=2&a-=1");
    }

    #[test]
    fn encodes_once_whether_given_raw_or_encoded() {
        assert_eq!(canonical("ሴ=bar"), "%E1%88%B4=bar");
        assert_eq!(canonical("%E1%88%B4=bar"), "%E1%88%B4=bar");
        assert_eq!(canonical("k=a b+c/d"), "k=a%20b%2Bc%2Fd");
        assert_eq!(canonical("k=a%20b%2bc%2Fd"), "k=a%20b%2Bc%2Fd");
        assert_eq!(canonical("k=x=y"), "k=x%3Dy");
        assert_eq!(canonical("-._~=-._~"), "-._~=-._~");
    }

    #[test]
    fn wire_keeps_order_and_bare_keys() {
        assert_eq!(wire("uploads"), "uploads");
        assert_eq!(wire("b=2&a&&c=x y"), "b=2&a&c=x%20y");
        let p = Param::raw("X-Amz-Credential", "AK/20150830/us-east-1/s3/aws4_request");
        assert_eq!(p.value, "AK%2F20150830%2Fus-east-1%2Fs3%2Faws4_request");
    }
}
