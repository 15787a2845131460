//! The little JSON the wasm bindings speak across the JS boundary: reading the flat options object (fields
//! that are strings, unsigned integers or booleans) and writing flat result and event objects. Records in
//! the bucket do not use it (they are serde_json's, see `records`); this goes once the bindings move to
//! serde-wasm-bindgen. Strict where JSON is (RFC 8259: no trailing commas, no leading zeros, valid UTF-8,
//! paired surrogates); never panics.

use crate::prelude::*;
use crate::error::{msg, Piece};

/// What went wrong, for the `detail` of the error the caller builds.
pub type Detail = String;

/// A cursor over one JSON document.
pub struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

/// Reads `body` as one JSON object, calling `field(name, reader)` for each member; `field` must consume
/// exactly one value (`string`, `uint`, ...). Anything but whitespace after the object fails.
pub fn object(body: &[u8], mut field: impl FnMut(&str, &mut Reader<'_>) -> Result<(), Detail>) -> Result<(), Detail> {
    members(body, &mut field)
}

/// `object`'s loop, once in the wasm for all its callers (`dyn`: a generic copy would be inlined into each).
fn members(body: &[u8], field: &mut dyn FnMut(&str, &mut Reader<'_>) -> Result<(), Detail>) -> Result<(), Detail> {
    let mut r = Reader { s: body, i: 0 };
    r.expect(b'{')?;
    if !r.eat(b'}') {
        loop {
            let name = r.string()?;
            r.expect(b':')?;
            r.ws();
            field(&name, &mut r)?;
            if r.eat(b'}') {
                break;
            }
            r.expect(b',')?;
        }
    }
    r.ws();
    if r.i < r.s.len() {
        return Err(r.error("trailing characters"));
    }
    Ok(())
}

impl Reader<'_> {
    fn error(&self, what: &str) -> Detail {
        msg!(what, " at byte ", self.i)
    }

    fn ws(&mut self) {
        while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Skips whitespace, then consumes `c` if it is next.
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let found = self.peek() == Some(c);
        if found {
            self.i += 1;
        }
        found
    }

    fn expect(&mut self, c: u8) -> Result<(), Detail> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error("invalid JSON"))
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let found = self.s.get(self.i..self.i + word.len()) == Some(word);
        if found {
            self.i += word.len();
        }
        found
    }

    /// A string value.
    pub fn string(&mut self) -> Result<String, Detail> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else { return Err(self.error("unterminated string")) };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else { return Err(self.error("unterminated string")) };
                    self.i += 1;
                    let plain = match e {
                        b'"' | b'\\' | b'/' => e,
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let c = self.unicode_escape()?;
                            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                            continue;
                        }
                        _ => return Err(self.error("invalid escape")),
                    };
                    out.push(plain);
                }
                0..=0x1f => return Err(self.error("control character in string")),
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.error("invalid UTF-8 in string"))
    }

    /// The code point of `\uXXXX` (the `\u` already read), joining a surrogate pair.
    fn unicode_escape(&mut self) -> Result<char, Detail> {
        let hi = self.hex4()?;
        let code = match hi {
            0xd800..=0xdbff => {
                if !self.literal(b"\\u") {
                    return Err(self.error("unpaired surrogate"));
                }
                let lo = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&lo) {
                    return Err(self.error("unpaired surrogate"));
                }
                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
            }
            _ => hi,
        };
        char::from_u32(code).ok_or_else(|| self.error("unpaired surrogate"))
    }

    fn hex4(&mut self) -> Result<u32, Detail> {
        let mut v = 0;
        for _ in 0..4 {
            let d = self.peek().and_then(|c| (c as char).to_digit(16)).ok_or_else(|| self.error("invalid \\u escape"))?;
            v = v * 16 + d;
            self.i += 1;
        }
        Ok(v)
    }

    /// A string or `null`.
    pub fn opt_string(&mut self) -> Result<Option<String>, Detail> {
        if self.literal(b"null") {
            return Ok(None);
        }
        self.string().map(Some)
    }

    /// A non-negative integer that fits in 64 bits (no sign, fraction or exponent).
    pub fn uint(&mut self) -> Result<u64, Detail> {
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
                .ok_or_else(|| self.error("integer too large"))?;
            self.i += 1;
        }
        let digits = self.i - start;
        let leading_zero = digits > 1 && self.s[start] == b'0';
        if digits == 0 || leading_zero || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return Err(self.error("expected a non-negative integer"));
        }
        Ok(v)
    }

    /// `true` or `false`.
    pub fn boolean(&mut self) -> Result<bool, Detail> {
        if self.literal(b"true") {
            Ok(true)
        } else if self.literal(b"false") {
            Ok(false)
        } else {
            Err(self.error("expected a boolean"))
        }
    }
}

/// Builds a JSON object member by member; names are trusted literals, values are escaped. Methods take
/// and give `&mut self`: by value, every call in a chain moved the `String` in and out through memory.
pub struct ObjectWriter(String);

impl ObjectWriter {
    pub fn new() -> Self {
        ObjectWriter(String::from("{"))
    }

    fn name(&mut self, name: &str) {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push('"');
        self.0.push_str(name);
        self.0.push_str("\":");
    }

    pub fn str(&mut self, name: &str, value: &str) -> &mut Self {
        self.name(name);
        push_string(&mut self.0, value);
        self
    }

    /// A string, or `null` when absent.
    pub fn opt_str(&mut self, name: &str, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => self.str(name, v),
            None => {
                self.name(name);
                self.0.push_str("null");
                self
            }
        }
    }

    pub fn uint(&mut self, name: &str, value: u64) -> &mut Self {
        self.name(name);
        value.push_to(&mut self.0);
        self
    }

    pub fn boolean(&mut self, name: &str, value: bool) -> &mut Self {
        self.name(name);
        self.0.push_str(if value { "true" } else { "false" });
        self
    }

    /// A value that is already JSON (a nested object, or `null`).
    pub fn raw(&mut self, name: &str, json: &str) -> &mut Self {
        self.name(name);
        self.0.push_str(json);
        self
    }

    /// The object so far, closed; the writer is left empty.
    pub fn finish(&mut self) -> String {
        self.0.push('}');
        core::mem::take(&mut self.0)
    }
}

impl Default for ObjectWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// `s` as a JSON string, escaped the way serde_json does it (so records stay byte-identical): `"`, `\`
/// and control characters only, short forms where JSON has them.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0'..='\u{1f}' => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 15] as char);
            }
            _ => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fields = (Option<String>, Option<u64>, Option<bool>);

    /// Reads `{"s": string, "n": uint, "b": bool}`, the one shape of value each name takes; a repeated or
    /// unknown name fails, as the bindings' options reader does.
    fn read(body: &str) -> Result<Fields, Detail> {
        let (mut s, mut n, mut b) = (None, None, None);
        object(body.as_bytes(), |name, r| {
            let fresh = match name {
                "s" => s.replace(r.string()?).is_none(),
                "n" => n.replace(r.uint()?).is_none(),
                "b" => b.replace(r.boolean()?).is_none(),
                _ => return Err(msg!("unknown field ", name)),
            };
            if fresh { Ok(()) } else { Err(msg!("duplicate field ", name)) }
        })?;
        Ok((s, n, b))
    }

    #[test]
    fn reads_fields() {
        let got = read(r#" { "n": 18446744073709551615, "s": "a\u00e9\ud83d\ude00\n\/", "b": true } "#);
        assert_eq!(got, Ok((Some("aé😀\n/".into()), Some(u64::MAX), Some(true))));
        assert_eq!(read("{}"), Ok((None, None, None)));
        assert_eq!(read(r#"{"\u0073":"k"}"#).unwrap().0.as_deref(), Some("k"));
        assert_eq!(object(br#"{"o":null}"#, |_, r| r.opt_string().map(drop)), Ok(()));
    }

    #[test]
    fn rejects_what_json_rejects() {
        let bad = [
            "", " ", "[]", "null", "{", "{,}", r#"{"n":1,}"#, r#"{"n":1}x"#, r#"{"n":1}{}"#, r#"{"n" 1}"#, r#"{n:1}"#,
            r#"{"n":01}"#, r#"{"n":-1}"#, r#"{"n":1.0}"#, r#"{"n":1e3}"#, r#"{"n":18446744073709551616}"#, r#"{"n":""}"#,
            r#"{"s":"a"#, "{\"s\":\"\u{1}\"}", r#"{"s":"\x"}"#, r#"{"s":"\u12"}"#, r#"{"s":"\ud800"}"#, r#"{"s":"\udc00"}"#,
            r#"{"s":"\ud800\u0041"}"#, r#"{"s":null}"#, r#"{"b":1}"#, r#"{"b":tru}"#, r#"{"x":1}"#, r#"{"n":1,"n":2}"#,
        ];
        for body in bad {
            assert!(read(body).is_err(), "{body:?} should not read");
        }
        assert!(object(b"{\"s\":\"\xff\"}", |_, r| r.string().map(drop)).is_err());
    }

    #[test]
    fn writes_serde_json_compatible_objects() {
        let json = ObjectWriter::new()
            .str("s", "q\"\\\u{1}\u{8}\u{c}\n\r\t\u{1f}é/\u{7f}")
            .opt_str("o", None)
            .uint("n", u64::MAX)
            .boolean("b", false)
            .raw("r", "{}")
            .finish();
        assert_eq!(json, r#"{"s":"q\"\\\u0001\b\f\n\r\t\u001fé/"#.to_owned() + "\u{7f}" + r#"","o":null,"n":18446744073709551615,"b":false,"r":{}}"#);
        let (mut s, mut n) = (None, None);
        object(json.as_bytes(), |name, r| match name {
            "s" => r.string().map(|v| s = Some(v)),
            "n" => r.uint().map(|v| n = Some(v)),
            "o" => r.opt_string().map(drop),
            "b" => r.boolean().map(drop),
            "r" => r.expect(b'{').and_then(|()| r.expect(b'}')),
            _ => Err(msg!("unexpected field ", name)),
        })
        .unwrap();
        assert_eq!((s.as_deref(), n), (Some("q\"\\\u{1}\u{8}\u{c}\n\r\t\u{1f}é/\u{7f}"), Some(u64::MAX)));
        assert_eq!(ObjectWriter::new().finish(), "{}");
    }

    #[test]
    fn strings_are_escaped_byte_for_byte_like_serde_json() {
        let mut all: String = (0u32..0x250).filter_map(char::from_u32).collect();
        all.push_str("\u{2028}\u{2029}\u{feff}\u{10ffff}😀");
        for s in [all.as_str(), "", "plain", "\"\\/"] {
            let mut mine = String::new();
            push_string(&mut mine, s);
            assert_eq!(mine, serde_json::to_string(s).unwrap());
        }
    }
}
