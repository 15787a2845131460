//! Validation of cell ids, node ids and the key prefix (SPEC §2), done before any request is built so a
//! bad id can never become a surprising key.

use crate::error::{msg, Error, Quoted, Result};

/// Cell and node ids: 1..=256 bytes of UTF-8, no `/`, `\`, control characters, not `.` or `..`.
pub fn check_id(kind: &str, id: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid(msg!(kind, " id ", Quoted(id), " ", why)));
    if id.is_empty() {
        return bad("is empty");
    }
    if id.len() > 256 {
        return Err(Error::invalid(msg!(kind, " id is ", id.len(), " bytes long; at most 256")));
    }
    if id == "." || id == ".." {
        return bad("is a path segment of its own");
    }
    if id.contains(['/', '\\']) {
        return bad("contains a slash");
    }
    if id.chars().any(char::is_control) {
        return bad("contains a control character");
    }
    Ok(())
}

/// The key prefix: empty, or `[A-Za-z0-9._/-]+` ending in `/`.
pub fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() {
        return Ok(());
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-');
    if !prefix.chars().all(allowed) {
        return Err(Error::invalid_value("prefix ", prefix, " may hold only A-Z a-z 0-9 . _ / -"));
    }
    if !prefix.ends_with('/') || prefix.starts_with('/') {
        return Err(Error::invalid_value("prefix ", prefix, " must end with '/' and not start with one"));
    }
    if prefix.split('/').any(|s| s == "." || s == "..") {
        return Err(Error::invalid_value("prefix ", prefix, " contains a '.' or '..' segment"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for ok in ["a", "edge-7", "tenant 42", "ünïcödé", "a.b", "...", &"x".repeat(256)] {
            assert!(check_id("cell", ok).is_ok(), "{ok:?}");
        }
        for bad in ["", ".", "..", "a/b", "a\\b", "a\nb", "a\u{7f}", "\u{0}", &"x".repeat(257)] {
            let e = check_id("cell", bad).unwrap_err();
            assert_eq!(e.code(), "invalid-input", "{bad:?}");
        }
        // 256 bytes, not 256 chars: a 2-byte char times 129 is 258 bytes.
        assert!(check_id("node", &"é".repeat(129)).is_err());
    }

    #[test]
    fn prefixes() {
        for ok in ["", "p/", "a/b-c_d.e/"] {
            assert!(check_prefix(ok).is_ok(), "{ok:?}");
        }
        for bad in ["p", "/p/", "a b/", "ü/", "../", "a/./", "a/../"] {
            assert!(check_prefix(bad).is_err(), "{bad:?}");
        }
    }
}
