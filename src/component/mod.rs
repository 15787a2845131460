//! The WebAssembly component (wasm32-wasip2, SPEC 4.5): the same core as the wasm-bindgen shell
//! (`crate::bindings`), behind another [`crate::env::Env`]. `env` is that `Env` over WASI (public, so a
//! component of another world can run the core too: examples/component-proxy); with the `component`
//! feature (default), `ownership` and `signing` export the `celld:edge` world of wit/world.wit, and
//! `error` turns `crate::Error` into its `error` record. Like the JS shell, this layer only converts:
//! no protocol logic here, and no panics on anything the host hands it.

mod env;
#[cfg(feature = "component")]
mod error;
#[cfg(feature = "component")]
mod ownership;
#[cfg(feature = "component")]
mod signing;

pub use env::WasiEnv;

#[cfg(feature = "component")]
#[allow(unsafe_code)] // the generated exports' ABI glue (src/lib.rs)
mod bindings {
    wit_bindgen::generate!({ path: "wit", world: "celld:edge/edge" });

    /// The type every export of the world is implemented on.
    pub(super) struct Component;

    export!(Component);
}
