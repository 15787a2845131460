//! celld-edge: exclusive, fenced ownership of named cells in any S3-compatible object store, for code at
//! the edge. Sans-IO at heart: the signer (`sigv4`), the S3 requests and answers (`s3`) and the ownership
//! decisions (`ownership`) are pure Rust with no clock, socket or randomness of their own; everything
//! impure arrives through [`env::Env`]. The wasm bindings (`bindings`) are a thin shell over that.

#![deny(unsafe_code)]

pub mod env;
pub mod error;
pub mod ownership;
pub mod s3;
pub mod sigv4;

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)] // wasm-bindgen's generated glue
mod bindings;

pub use error::{Error, Result};
