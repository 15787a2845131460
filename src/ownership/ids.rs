//! Validation of cell ids, node ids and the key prefix (SPEC §2), done before any request is built so a
//! bad id can never become a surprising key. By default the ids are celld's own, so that an edge node and
//! a celld node name a cell by the same object: celld refuses ids outside its sets, and its storage client
//! would percent-encode them into a different key (`a#b` → `cells/a%23b/own.json`). Wider ids are an
//! explicit choice (`IdSet::Utf8`) for buckets no celld node shares.

use crate::error::{Error, Quoted, Result};

/// Which ids an instance accepts (`Config::ids`; JS `ids: "celld" | "utf8"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IdSet {
    /// celld's: cells `[A-Za-z0-9_.:$-]`, 1..=255 bytes, not `.` or `..`; nodes `[A-Za-z0-9_.-]`,
    /// 1..=128 bytes.
    #[default]
    Celld,
    /// 1..=256 bytes of UTF-8, no `/`, `\` or control characters, not `.` or `..`. Only for buckets that
    /// no celld node shares: celld cannot reach a cell or node named outside its sets.
    Utf8,
}

/// A cell id, refused with `invalid-input` unless `set` allows it.
pub fn check_cell(set: IdSet, id: &str) -> Result<()> {
    match set {
        IdSet::Celld => celld("cell", id, 255, |b| b.is_ascii_alphanumeric() || b"_.:$-".contains(&b), "A-Z a-z 0-9 _ . : $ -"),
        IdSet::Utf8 => utf8("cell", id),
    }
}

/// A node id, refused with `invalid-input` unless `set` allows it.
pub fn check_node(set: IdSet, id: &str) -> Result<()> {
    match set {
        IdSet::Celld => celld("node", id, 128, |b| b.is_ascii_alphanumeric() || b"_.-".contains(&b), "A-Z a-z 0-9 _ . -"),
        IdSet::Utf8 => utf8("node", id),
    }
}

/// The id set of an instance in a bucket a celld fleet shares (`celld`: `wake/format.json` is there, or the
/// option `celld: true`): only celld's own. celld's start-up inventory of the bucket refuses any cell it
/// cannot name ("invalid cell identity") and stops, so one wider id stops every celld node from starting.
pub fn check_set_for_fleet(set: IdSet, celld: bool) -> Result<()> {
    if celld && set == IdSet::Utf8 {
        return Err(Error::invalid(
            "ids: \"utf8\" in a bucket a celld fleet shares (wake/format.json is there, or celld: true): celld stops at \
             start-up on a cell id outside its set; use ids: \"celld\"",
        ));
    }
    Ok(())
}

fn celld(kind: &str, id: &str, max: usize, allowed: fn(u8) -> bool, set: &str) -> Result<()> {
    common(kind, id, max)?;
    // celld refuses `.` and `..` as cells (path segments of their own); as node ids it takes them.
    if kind == "cell" && (id == "." || id == "..") {
        return Err(Error::invalid(format!("{kind} id {} is a path segment of its own", Quoted(id))));
    }
    if !id.bytes().all(allowed) {
        return Err(Error::invalid(format!("{kind} id {} may hold only {set} (celld's ids; wider ids need the option ids: \"utf8\", for buckets no celld node shares)", Quoted(id))));
    }
    Ok(())
}

fn utf8(kind: &str, id: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid(format!("{kind} id {} {why}", Quoted(id))));
    common(kind, id, 256)?;
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

fn common(kind: &str, id: &str, max: usize) -> Result<()> {
    if id.is_empty() {
        return Err(Error::invalid(format!("{kind} id is empty")));
    }
    if id.len() > max {
        return Err(Error::invalid(format!("{kind} id is {} bytes long; at most {max}", id.len())));
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
    fn celld_sets_are_the_default() {
        assert_eq!(IdSet::default(), IdSet::Celld);
        let cells = ["a", "edge-7", "Class:instance", "My$Class:x.y_z-1", "...", "a..b", &"x".repeat(255)];
        for ok in cells {
            assert!(check_cell(IdSet::Celld, ok).is_ok(), "{ok:?}");
        }
        let not_cells = ["", ".", "..", "a b", "a#b", "a/b", "a\\b", "a%2F", "ü", "a\nb", "a+b", "a@b", "a~b", &"x".repeat(256)];
        for bad in not_cells {
            let e = check_cell(IdSet::Celld, bad).unwrap_err();
            assert_eq!(e.code(), "invalid-input", "{bad:?}");
        }
        assert!(check_cell(IdSet::Celld, "a b").unwrap_err().to_string().contains("ids: \"utf8\""));
        for ok in ["n", "edge-7", "n.1_2", ".", "..", &"n".repeat(128)] {
            assert!(check_node(IdSet::Celld, ok).is_ok(), "{ok:?}");
        }
        for bad in ["", "a:b", "a$b", "a b", "a/b", "ü", "a#b", &"n".repeat(129)] {
            assert_eq!(check_node(IdSet::Celld, bad).unwrap_err().code(), "invalid-input", "{bad:?}");
        }
        let e = check_node(IdSet::Celld, &"n".repeat(129)).unwrap_err();
        assert!(e.to_string().contains("129 bytes long; at most 128"), "{e}");
    }

    #[test]
    fn the_wide_option_takes_utf8() {
        for ok in ["a", "edge-7", "tenant 42", "ünïcödé", "a#b", "a.b", "...", &"x".repeat(256)] {
            assert!(check_cell(IdSet::Utf8, ok).is_ok(), "{ok:?}");
            assert!(check_node(IdSet::Utf8, ok).is_ok(), "{ok:?}");
        }
        for bad in ["", ".", "..", "a/b", "a\\b", "a\nb", "a\u{7f}", "\u{0}", &"x".repeat(257)] {
            assert_eq!(check_cell(IdSet::Utf8, bad).unwrap_err().code(), "invalid-input", "{bad:?}");
            assert_eq!(check_node(IdSet::Utf8, bad).unwrap_err().code(), "invalid-input", "{bad:?}");
        }
        // 256 bytes, not 256 chars: a 2-byte char times 129 is 258 bytes.
        assert!(check_node(IdSet::Utf8, &"é".repeat(129)).is_err());
    }

    #[test]
    fn utf8_ids_are_refused_in_a_celld_fleet() {
        assert!(check_set_for_fleet(IdSet::Utf8, false).is_ok());
        assert!(check_set_for_fleet(IdSet::Celld, true).is_ok());
        let e = check_set_for_fleet(IdSet::Utf8, true).unwrap_err();
        assert_eq!(e.code(), "invalid-input");
        assert!(e.to_string().contains("wake/format.json"), "{e}");
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
