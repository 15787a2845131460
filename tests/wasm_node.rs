//! The wasm test suite (`tests/wasm_suite/`) in Node: `wasm-pack test --node -- --test wasm_node`, run by
//! scripts/test. Native builds skip this file.
#![cfg(target_arch = "wasm32")]

const RUNTIME: wasm_suite::Runtime = wasm_suite::Runtime::Node;

mod wasm_suite;
