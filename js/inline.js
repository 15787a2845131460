// Entry for browsers, bundlers (esbuild, Vite, webpack, for the web or for Node) and CommonJS: the wasm
// is inlined in the JS (pkg/wasm-inline.js, base64, made by scripts/build) and instantiated synchronously,
// so there is no wasm file for a bundler to follow or copy and no top-level await (IIFE and CommonJS
// bundles work). No init call for users.
import { initSync } from "../pkg/celld_edge.js";
import wasmBase64 from "../pkg/wasm-inline.js";
import { decodeBase64 } from "./base64.js";

initSync({ module: decodeBase64(wasmBase64) });

export * from "./api.js";
