// `celld-edge/sign` for Cloudflare Workers (bundled into pkg/sign-workerd.js, the wasm import kept for
// wrangler): the signing-only wasm as a compiled module, as workerd.js does the full one.
import wasmModule from "../pkg/celld_edge_sign_bg.wasm";
import { initSync } from "../pkg/celld_edge_sign.js";

initSync({ module: wasmModule });

export * from "./sign-api.js";
