// Entry for browsers, bundlers (esbuild, Vite, webpack, for the web or for Node) and CommonJS: the wasm
// is inlined in the JS (pkg/wasm-inline.js, base64, made by scripts/build) and instantiated synchronously,
// so there is no wasm file for a bundler to follow or copy and no top-level await (IIFE and CommonJS
// bundles work). No init call for users.
import { initSync } from "../pkg/celld_edge.js";
import wasmBase64 from "../pkg/wasm-inline.js";

function decodeBase64(text) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

initSync({ module: decodeBase64(wasmBase64) });

export * from "./api.js";
