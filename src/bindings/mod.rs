//! The wasm-bindgen shell: the only place where Rust meets JS values. One file per JS class, holding
//! every `#[wasm_bindgen]` method of it: `ownership` is `WasmOwnership` (the core of js/ownership.js's
//! `S3Ownership`: async methods, each a Promise), `inspector` is `WasmInspector` (js/inspector.js's
//! `S3Inspector`), `sign` is the signer's fast path (js/sign.js; functions over the instance's `SignerIo`). Beside them: `convert` (the
//! options and arguments in, results and events out, through serde-wasm-bindgen), `listing` and `metrics`
//! (their results' shapes), `web` (the [`crate::env::Env`] over the injected `fetch`), `r2` (its requests
//! through an R2 binding instead), `events` (the [`crate::env::Observer`] beside it: metrics, the
//! authority watcher, `onEvent`), `error` (every JS
//! error), `trap` (what keeps a wasm trap from hanging callers), `option_names` (S3Ownership's option names,
//! which the signers name too). Each JS contract has one owner and the files depend one way: the classes
//! use `convert`, `web` and `events`; `web` (fetch, clocks, the credentials call) uses `convert` (the
//! credentials' answer) and `r2`; `convert` uses `r2` (the binding's check); `r2` uses only `error` (what a
//! thrown value says) and `trap` (`Hooks::wait`, the instance's gate). This layer converts and checks inputs and
//! turns `crate::Error` into JS errors; it must never hold protocol logic, and never panic on anything JS
//! hands it.

// What every wasm holds, the signing-only one (`celld-edge/sign`: feature `ownership` off) included. That
// one names no js-sys (nor wasm-bindgen-futures, which uses it): a js-sys the code names at all links
// every binding js-sys declares into the module, used or not (bench/README.md, the signing-only entry).
// So `trap` keeps what uses js-sys to the ownership classes, and `sign` makes its errors through the
// loader's hooks rather than through `error`.
mod option_names;
mod sign;
mod trap;

// The ownership classes and their `Env`: only in the full wasm (feature `ownership`, on by default).
#[cfg(feature = "ownership")]
mod convert;
#[cfg(feature = "ownership")]
mod error;
#[cfg(feature = "ownership")]
mod events;
#[cfg(feature = "ownership")]
mod inspector;
#[cfg(feature = "ownership")]
mod listing;
#[cfg(feature = "ownership")]
mod metrics;
#[cfg(feature = "ownership")]
mod ownership;
#[cfg(feature = "ownership")]
mod r2;
#[cfg(feature = "ownership")]
mod web;
