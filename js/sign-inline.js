// `celld-edge/sign` for Deno, browsers, bundlers and CommonJS (bundled into pkg/sign.js and pkg/sign.cjs):
// the signing-only wasm inlined as base64 and instantiated synchronously, as inline.js does the full one.
import { initSync } from "../pkg/celld_edge_sign.js";
import wasmBase64 from "../pkg/wasm-sign-inline.js";
import { decodeBase64 } from "./base64.js";

initSync({ module: decodeBase64(wasmBase64) });

export * from "./sign-api.js";
