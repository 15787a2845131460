//! `S3Ownership`'s option names, in the one list that both its options check (src/bindings/convert.rs)
//! and the signers (js/sign.js names them when a signer is handed one) read; compiled into the
//! signing-only wasm too (feature `ownership` off), which has no options check of its own.

/// The options' names, for naming the one whose value has the wrong type.
pub(crate) const OPTION_NAMES: [&str; 21] = [
    "endpoint", "bucket", "region", "accessKeyId", "secretAccessKey", "sessionToken", "node", "addr", "prefix",
    "leaseTtlMs", "maxClockSkewMs", "requestTimeoutMs", "pathStyle", "probe", "probeTrustMs", "ids", "celld", "fetch",
    "onEvent", "credentials", "r2",
];

/// `ownershipOptionNames()`: the options `new S3Ownership(...)` takes, comma-separated, for js/sign.js (which
/// names them when a signer is handed one) and the check of js/ownership.d.ts (tests/node/shapes.test.mjs).
/// One string rather than an array: the signing-only wasm has no js-sys to build one with, and the glue
/// that passes a `Vec<String>` out weighs more than the list.
#[wasm_bindgen::prelude::wasm_bindgen(js_name = ownershipOptionNames)]
pub fn ownership_option_names() -> String {
    let mut names = String::new();
    for name in OPTION_NAMES {
        if !names.is_empty() {
            names.push(',');
        }
        names.push_str(name);
    }
    names
}
