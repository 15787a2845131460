// Cloudflare Workers (workerd) entry: Workers cannot compile wasm from bytes at run time, so the module
// is imported (wrangler and Miniflare turn a .wasm import into a compiled WebAssembly.Module).
import wasmModule from "../pkg/celld_edge_bg.wasm";
import { initSync } from "../pkg/celld_edge.js";
import { holdEachRequest } from "./instance.js";

initSync({ module: wasmModule });
holdEachRequest();

export * from "./api.js";
