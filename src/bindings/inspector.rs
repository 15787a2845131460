//! `WasmInspector`: the core of js/inspector.js's `S3Inspector`, seeing the bucket without a node id or a
//! lease (`listCells`, `listNodes`, `probe`; SPEC §4.2), each a Promise. Options are checked in `convert`,
//! entries converted in `listing`; no protocol logic here, and no panics.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::events::WebObserver;
use super::convert::{self, INSPECTOR};
use super::error::{js_error, use_error_class};
use super::listing::{cells_out, nodes_out};
use super::trap::{Guarded, Hooks};
use super::web::WebEnv;
use crate::error::Error;
use crate::ownership::Inspector;

/// The wasm half of `S3Inspector`.
#[wasm_bindgen]
pub struct WasmInspector {
    inspector: Rc<Inspector<WebEnv>>,
    hooks: Hooks,
}

#[wasm_bindgen]
impl WasmInspector {
    /// `options` as `new S3Inspector(options)` got them; `hooks` from js/instance.js.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, hooks: Hooks) -> Result<WasmInspector, JsValue> {
        use_error_class(hooks.error_class());
        let o = convert::options_for(INSPECTOR, options).map_err(js_error)?;
        let mut env = WebEnv::new(o.fetch, hooks.clone());
        env.provider = o.credentials;
        env.r2 = o.r2;
        let inspector = Inspector::new(&o.config, env).map_err(js_error)?.observed_by(WebObserver::new(o.on_event));
        Ok(WasmInspector { inspector: Rc::new(inspector), hooks })
    }

    fn run<F>(&self, op: impl FnOnce(Rc<Inspector<WebEnv>>) -> F) -> Promise
    where
        F: Future<Output = Result<JsValue, Error>> + 'static,
    {
        run_on(&self.hooks, self.inspector.clone(), op)
    }

    #[wasm_bindgen(js_name = listCells)]
    pub fn list_cells(&self) -> Promise {
        self.run(|i| async move { cells_out(i.list_cells().await?) })
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self) -> Promise {
        self.run(|i| async move { nodes_out(i.list_nodes().await?) })
    }

    pub fn probe(&self) -> Promise {
        self.run(|i| async move { convert::probe(i.probe().await?) })
    }
}

/// One listing operation as a Promise, [`Guarded`] like every `WasmOwnership` operation.
pub(super) fn run_on<F>(hooks: &Hooks, inspector: Rc<Inspector<WebEnv>>, op: impl FnOnce(Rc<Inspector<WebEnv>>) -> F) -> Promise
where
    F: Future<Output = Result<JsValue, Error>> + 'static,
{
    let op: Pin<Box<dyn Future<Output = Result<JsValue, Error>>>> = Box::pin(op(inspector));
    let guarded = Guarded::new(hooks.clone(), op);
    future_to_promise(async move { guarded.await?.map_err(js_error) })
}
