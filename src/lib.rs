//! celld-edge: exclusive, fenced ownership of named cells in any S3-compatible object store, for code at
//! the edge. Sans-IO at heart: the signer (`sigv4`), the S3 requests and answers (`s3`) and the ownership
//! decisions (`ownership`) are pure Rust with no clock, socket or randomness of their own; everything
//! impure arrives through [`env::Env`]. The wasm bindings (`bindings`) are a thin shell over that.
//!
//! On wasm32 the crate is `no_std` (with `alloc`) and brings its own panic handler and allocator: std's
//! panic machinery and `dlmalloc` cost ~10 KB of the shipped wasm. Native builds (the simulation, the
//! tests, the benches) link std as usual. The code is the same on both: `core::`/`alloc::` paths only.

#![cfg_attr(target_arch = "wasm32", no_std)]
#![deny(unsafe_code)]

extern crate alloc;

/// What the std prelude would give, for the `no_std` build; every module that allocates imports it.
mod prelude {
    pub(crate) use alloc::borrow::ToOwned;
    pub(crate) use alloc::boxed::Box;
    pub(crate) use alloc::string::String;
    pub(crate) use alloc::vec;
    pub(crate) use alloc::vec::Vec;
}

pub mod env;
pub mod error;
pub mod ownership;
pub mod s3;
pub mod sigv4;

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)] // wasm-bindgen's generated glue
mod bindings;
#[cfg(any(target_arch = "wasm32", test))]
#[allow(unsafe_code)] // the allocator: the one module with unsafe code of its own
mod heap;

pub use error::{Error, Failure, Refusal, Result};

/// A panic is a bug, and the wasm instance cannot go on after one: trap at once, with no message (the
/// message formatting is what std's handler costs). Left out when the browser tests link std, whose own
/// handler then applies (the `std-panic-handler` feature, set by the test-only self dev-dependency).
#[cfg(all(target_arch = "wasm32", not(feature = "std-panic-handler")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// Every allocation of the wasm build (see `heap` for the memory-use trade-off).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static HEAP: heap::Global = heap::Global::new();
