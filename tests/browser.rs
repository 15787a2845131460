//! The wasm test suite (`tests/wasm_suite/`) in headless Chromium: `wasm-pack test --headless --chrome --
//! --test browser`, run by scripts/test. Native builds skip this file.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const RUNTIME: wasm_suite::Runtime = wasm_suite::Runtime::Chromium;

mod wasm_suite;
