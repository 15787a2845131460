//! Fuzz target: the owner / lease / nonce decoders over arbitrary bytes. Must never panic or hang; a
//! body either decodes to a record within the wire rules or is a `corrupt-record` error naming the key.
#![no_main]

use celld_edge::ownership::records::{decode_lease, decode_nonce, decode_owner, encode_lease, encode_owner, MAX_EPOCH};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match decode_owner("cells/c/own.json", data, "\"t\"") {
        Ok(r) => {
            assert!(r.epoch <= MAX_EPOCH);
            // What we accept, we can write back and read the same.
            let again =
                decode_owner("k", &encode_owner(&r.node, r.epoch, r.nonce.as_deref().unwrap_or("")), "t").unwrap();
            assert_eq!((again.node, again.epoch), (r.node, r.epoch));
        }
        Err(e) => assert!(e.code() == "corrupt-record" && e.to_string().contains("cells/c/own.json")),
    }
    match decode_lease("nodes/n.json", data, "t") {
        Ok(r) => {
            let again = decode_lease("k", &encode_lease(&r.node, r.expires_ms, &r.addr, "n"), "t").unwrap();
            assert_eq!((again.node, again.expires_ms, again.addr), (r.node, r.expires_ms, r.addr));
        }
        Err(e) => assert!(e.code() == "corrupt-record" && e.to_string().contains("nodes/n.json")),
    }
    if let Err(e) = decode_nonce("k", data) {
        assert_eq!(e.code(), "corrupt-record");
    }
});
