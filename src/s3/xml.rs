//! A small, strict XML reader for the few S3 answers the crate reads in full (ListObjectsV2): a flat
//! sequence of start tags, end tags and entity-decoded text. Handles what real stores send — the XML
//! declaration, namespaces and attributes on tags, comments, CDATA, pretty-printing whitespace — and
//! refuses the rest (DTDs, unbalanced or mismatched tags, unknown entities, invalid character
//! references, raw control characters) with a detail naming the byte. No recursion, nesting bounded by
//! `MAX_DEPTH`; never panics. It must never guess at a malformed document: a key read wrong is a cell
//! listed wrong. Works on bytes with one search helper instead of `str`'s generic pattern methods, whose
//! per-call-site copies cost KBs of wasm. (`answer::parse_error` stays deliberately lenient: an error
//! body of any shape must still yield a code.)


/// What went wrong, for the `detail` of the error the caller builds.
pub type Detail = String;

/// Element nesting allowed (ListBucketResult > Contents > Owner > ID is 4 deep).
const MAX_DEPTH: usize = 16;

/// One piece of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token<'a> {
    /// A start tag's local name (namespace prefix removed). A self-closing tag gives `Start` then `End`.
    Start(&'a str),
    End(&'a str),
    /// Character data between tags, entity-decoded; whitespace kept as sent.
    Text(String),
}

#[inline(never)]
fn at(what: &str, pos: usize) -> Detail {
    format!("{what} at byte {pos}")
}

/// Where `needle` next starts in `s` at or after `from`.
fn find(s: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    s.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The UTF-8 text of a slice cut at ASCII bytes of a document already checked to be UTF-8.
fn text_of(s: &[u8]) -> &str {
    core::str::from_utf8(s).unwrap_or_default()
}

/// Reads `body` as one XML document into its tokens (the whitespace outside the root element is dropped).
pub fn tokens(body: &[u8]) -> Result<Vec<Token<'_>>, Detail> {
    if let Err(e) = core::str::from_utf8(body) {
        return Err(at("invalid UTF-8", e.valid_up_to()));
    }
    let s = body;
    let mut out = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    let mut seen_root = false;
    let mut i = 0;
    while i < s.len() {
        let rest = s.get(i..).unwrap_or_default();
        if rest.first() != Some(&b'<') {
            let end = rest.iter().position(|&b| b == b'<').map_or(s.len(), |n| n + i);
            let raw = s.get(i..end).unwrap_or_default();
            if open.is_empty() {
                if !raw.iter().all(|&b| is_space(b)) {
                    return Err(at("text outside the root element", i));
                }
            } else {
                out.push(Token::Text(unescape(raw).map_err(|d| format!("{d} in text at byte {i}"))?));
            }
            i = end;
            continue;
        }
        let (close, skip) = if rest.starts_with(b"<?") {
            (&b"?>"[..], "unterminated <?")
        } else if rest.starts_with(b"<!--") {
            (&b"-->"[..], "unterminated comment")
        } else if rest.starts_with(b"<![CDATA[") {
            let end = find(s, i + 9, b"]]>").ok_or_else(|| at("unterminated CDATA", i))?;
            if open.is_empty() {
                return Err(at("CDATA outside the root element", i));
            }
            out.push(Token::Text(text_of(s.get(i + 9..end).unwrap_or_default()).to_owned()));
            i = end + 3;
            continue;
        } else if rest.starts_with(b"<!") {
            return Err(at("DOCTYPE or declaration not supported", i));
        } else {
            (&b""[..], "")
        };
        if !close.is_empty() {
            i = find(s, i + 2, close).ok_or_else(|| at(skip, i))? + close.len();
            continue;
        }
        let end = find(s, i, b">").ok_or_else(|| at("unterminated tag", i))?;
        let pos = i;
        i = end + 1;
        if let Some(tag) = s.get(pos + 2..end).filter(|_| rest.get(1) == Some(&b'/')) {
            let name_end = tag.iter().rposition(|&b| !is_space(b)).map_or(0, |n| n + 1);
            let name = local(tag.get(..name_end).unwrap_or_default());
            match open.pop() {
                Some(expected) if expected == name => out.push(Token::End(name)),
                Some(expected) => return Err(format!("</{name}> closes <{expected}> at byte {pos}")),
                None => return Err(format!("</{name}> without a start tag at byte {pos}")),
            }
            continue;
        }
        let tag = s.get(pos + 1..end).unwrap_or_default();
        let (tag, empty) = match tag.strip_suffix(b"/") {
            Some(tag) => (tag, true),
            None => (tag, false),
        };
        let name = start_tag_name(tag).ok_or_else(|| at("malformed tag", pos))?;
        if open.is_empty() && seen_root {
            return Err(at("a second root element", pos));
        }
        if open.len() == MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH} at byte {pos}"));
        }
        seen_root = true;
        out.push(Token::Start(name));
        if empty {
            out.push(Token::End(name));
        } else {
            open.push(name);
        }
    }
    match open.last() {
        Some(name) => Err(format!("<{}> is never closed", *name)),
        None if !seen_root => Err("no root element".to_owned()),
        None => Ok(out),
    }
}

/// The name of `Name attr="v" ...` (the bytes between `<` and `>`), namespace prefix removed.
/// Attributes are checked for shape (name, `=`, a quoted value) and otherwise ignored.
fn start_tag_name(tag: &[u8]) -> Option<&str> {
    let name_end = tag.iter().position(|&b| is_space(b)).unwrap_or(tag.len());
    let name = tag.get(..name_end)?;
    if !is_name(name) {
        return None;
    }
    let mut i = name_end;
    loop {
        while tag.get(i).is_some_and(|&b| is_space(b)) {
            i += 1;
        }
        if i == tag.len() {
            return Some(local(name));
        }
        let eq = i + tag.get(i..)?.iter().position(|&b| b == b'=')?;
        let attr = tag.get(i..eq)?;
        let attr_end = attr.iter().rposition(|&b| !is_space(b)).map_or(0, |n| n + 1);
        if !is_name(attr.get(..attr_end)?) {
            return None;
        }
        i = eq + 1;
        while tag.get(i).is_some_and(|&b| is_space(b)) {
            i += 1;
        }
        let quote = *tag.get(i).filter(|&&q| q == b'"' || q == b'\'')?;
        let close = i + 1 + tag.get(i + 1..)?.iter().position(|&b| b == quote)?;
        unescape(tag.get(i + 1..close)?).ok()?;
        i = close + 1;
        if !(i == tag.len() || tag.get(i).is_some_and(|&b| is_space(b))) {
            return None;
        }
    }
}

fn is_name(name: &[u8]) -> bool {
    let first_ok = name.first().is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_' || b >= 0x80);
    first_ok && name.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':') || b >= 0x80)
}

/// `s3:Key` → `Key`.
fn local(name: &[u8]) -> &str {
    text_of(name.iter().rposition(|&b| b == b':').and_then(|n| name.get(n + 1..)).unwrap_or(name))
}

/// Decodes the five predefined entities and numeric character references (`&#13;`, `&#x1F600;`); any
/// other `&` is an error, as is a reference to a character XML cannot hold (NUL, a surrogate), a `<`,
/// or a raw C0 control character (AWS writes them as references).
pub fn unescape(raw: &[u8]) -> Result<String, Detail> {
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        i += 1;
        if b == b'<' {
            return Err("'<' in text".to_owned());
        }
        if b < 0x20 && !is_space(b) {
            return Err("a raw control character".to_owned());
        }
        if b != b'&' {
            out.push(b);
            continue;
        }
        let semi = raw.get(i..).and_then(|r| r.iter().position(|&c| c == b';')).ok_or_else(|| "unterminated entity".to_owned())?;
        let entity = text_of(raw.get(i..i + semi).unwrap_or_default());
        i += semi + 1;
        let c = entity_char(entity).ok_or_else(|| format!("unknown entity &{entity};"))?;
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    }
    String::from_utf8(out).map_err(|_| "invalid UTF-8".to_owned())
}

/// The character an entity's name (between `&` and `;`) stands for: one of the five predefined, or a
/// numeric reference to a character XML can hold.
fn entity_char(entity: &str) -> Option<char> {
    match entity {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let code = match entity.strip_prefix("#x").or_else(|| entity.strip_prefix("#X")) {
                Some(hex) => number(hex, 16, 6),
                None => entity.strip_prefix('#').and_then(|dec| number(dec, 10, 7)),
            };
            code.filter(|&c| c != 0).and_then(char::from_u32)
        }
    }
}

/// What [`unescape`] decodes, for text that ends up in a message (an error body's `<Message>`): what
/// does not decode is kept as sent instead of refused, so a store's sloppy XML still reads. Go's
/// encoding/xml (versitygw, MinIO) writes `"` as `&#34;`.
pub fn unescape_lenient(mut raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    while let Some((before, rest)) = raw.split_once('&') {
        out.push_str(before);
        // An entity name is short: a `;` further on belongs to the text, not to this `&`.
        let decoded = rest.get(..rest.len().min(10)).and_then(|head| head.find(';')).and_then(|semi| Some((entity_char(rest.get(..semi)?)?, semi)));
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                raw = rest.get(semi + 1..).unwrap_or_default();
            }
            None => {
                out.push('&');
                raw = rest;
            }
        }
    }
    out.push_str(raw);
    out
}

/// 1..=`max_digits` digits in `radix` (10 or 16), folded by hand: `str::parse` costs wasm for nothing here.
fn number(digits: &str, radix: u32, max_digits: usize) -> Option<u32> {
    if digits.is_empty() || digits.len() > max_digits {
        return None;
    }
    digits.chars().try_fold(0u32, |n, c| Some(n * radix + c.to_digit(radix)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Token::*;

    fn t(s: &str) -> Token<'static> {
        Text(s.to_owned())
    }

    #[test]
    fn reads_declarations_namespaces_comments_cdata_and_self_closing_tags() {
        let doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- hi -->\n<s3:R xmlns:s3=\"urn:x\" a='1'>\
                   <K>a &amp; b&#13;&#x1F600;</K><![CDATA[<raw>&amp;]]><E/><F a=\"&lt;\" /></s3:R>\n";
        assert_eq!(
            tokens(doc.as_bytes()).unwrap(),
            vec![
                Start("R"),
                Start("K"),
                t("a & b\r😀"),
                End("K"),
                t("<raw>&amp;"),
                Start("E"),
                End("E"),
                Start("F"),
                End("F"),
                End("R")
            ]
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_faithfully() {
        let cases = [
            ("", "no root element"),
            ("   ", "no root element"),
            ("<a>", "never closed"),
            ("<a></b>", "closes"),
            ("</a>", "without a start tag"),
            ("<a></a><b></b>", "second root"),
            ("x<a></a>", "outside the root"),
            ("<a>&bogus;</a>", "unknown entity"),
            ("<a>&#0;</a>", "unknown entity"),
            ("<a>&#xD800;</a>", "unknown entity"),
            ("<a>&#x;</a>", "unknown entity"),
            ("<a>&#99999999;</a>", "unknown entity"),
            ("<a>& b</a>", "unterminated entity"),
            ("<!DOCTYPE a><a></a>", "DOCTYPE"),
            ("<a><!-- x</a>", "unterminated comment"),
            ("<a><![CDATA[x</a>", "unterminated CDATA"),
            ("<a", "unterminated tag"),
            ("<a b></a>", "malformed tag"),
            ("<a b=c></a>", "malformed tag"),
            ("<a b=\"c></a>", "malformed tag"),
            ("<1a></1a>", "malformed tag"),
            ("<a b=\"1\"c=\"2\"></a>", "malformed tag"),
            ("<?xml", "unterminated <?"),
            ("<a>\u{0}</a>", "control character"),
            ("<a>x&amp;\u{1}</a>", "control character"),
        ];
        for (doc, want) in cases {
            match tokens(doc.as_bytes()) {
                Err(d) => assert!(d.contains(want), "{doc:?}: {d}"),
                Ok(t) => panic!("{doc:?} read as {t:?}"),
            }
        }
        assert!(tokens(b"<a>\xff</a>").unwrap_err().contains("UTF-8"));
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(tokens(deep.as_bytes()).unwrap_err().contains("nesting"));
        let ok = "<a>".repeat(MAX_DEPTH) + &"</a>".repeat(MAX_DEPTH);
        assert!(tokens(ok.as_bytes()).is_ok());
    }

    #[test]
    fn entities() {
        assert_eq!(unescape(b"&lt;&gt;&amp;&quot;&apos;&amp;lt;").unwrap(), "<>&\"'&lt;");
        assert_eq!(unescape(b"&#65;&#x41;&#X41;").unwrap(), "AAA");
        assert_eq!(unescape("plain é".as_bytes()).unwrap(), "plain é");
        assert!(unescape(b"a<b").is_err());
    }

    #[test]
    fn lenient_entities_decode_what_they_can_and_keep_the_rest() {
        assert_eq!(unescape_lenient("the region &#34;us-east-1&#34; is wrong; expecting &#34;eu-west-1&#34;"), "the region \"us-east-1\" is wrong; expecting \"eu-west-1\"");
        assert_eq!(unescape_lenient("&lt;&gt;&quot;&apos;&amp;&amp;lt;&#x41;"), "<>\"'&&lt;A");
        assert_eq!(unescape_lenient("&bogus; & &#0; &#xD800; a&b;c &"), "&bogus; & &#0; &#xD800; a&b;c &");
        assert_eq!(unescape_lenient("é&#233;"), "éé");
    }
}
