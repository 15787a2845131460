//! The wasm-bindgen shell: the only place where Rust meets JS values. One file per JS class, holding
//! every `#[wasm_bindgen]` method of it: `ownership` is `WasmOwnership` (the core of js/ownership.js's
//! `S3Ownership`: async methods, each a Promise), `inspector` is `WasmInspector` (js/inspector.js's
//! `S3Inspector`), `sign` is `SignerIo` (the signer's fast path, js/sign.js). Beside them: `convert` (the
//! options and arguments in, results and events out, through serde-wasm-bindgen), `listing` and `metrics`
//! (their results' shapes), `web` (the [`crate::env::Env`] over the injected `fetch`), `r2` (its requests
//! through an R2 binding instead), `events` (the [`crate::env::Observer`] beside it: metrics, the
//! authority watcher, `onEvent`), `error` (every JS
//! error), `trap` (what keeps a wasm trap from hanging callers). This layer converts and checks inputs and
//! turns `crate::Error` into JS errors; it must never hold protocol logic, and never panic on anything JS
//! hands it.

mod convert;
mod error;
mod events;
mod inspector;
mod listing;
mod metrics;
mod ownership;
mod r2;
mod sign;
mod trap;
mod web;
