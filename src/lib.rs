//! celld-edge: exclusive, fenced ownership of named cells in any S3-compatible object store, for code at
//! the edge. Sans-IO at heart: the signer (`sigv4`), the S3 requests and answers (`s3`) and the ownership
//! decisions (`ownership`) are pure Rust with no clock, socket or randomness of their own; everything
//! impure arrives through [`env::Env`]. The wasm bindings (`bindings`) are a thin shell over that.
//!
//! std everywhere, with the default allocator, on wasm32 as natively. Size rules: the shipped package has
//! a budget (bench/size.mjs measures it, bench/README.md says where it stands); code is written for
//! clarity and speed, and bytes are never argued in comments (figures belong in bench/).

// No unsafe code; in the component build, only the exports wit-bindgen generates have some
// (src/component/mod.rs allows it there alone), so the rule is `deny` rather than `forbid` in that build.
#![cfg_attr(not(all(target_arch = "wasm32", target_os = "wasi")), forbid(unsafe_code))]
#![cfg_attr(all(target_arch = "wasm32", target_os = "wasi"), deny(unsafe_code))]

pub mod env;
pub mod error;
pub mod metrics;
pub mod ownership;
pub mod s3;
pub mod sigv4;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod bindings;
#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
pub mod component;

pub use error::{Error, Failure, Refusal, Result};
