// Browser and bundler entry (also the `default` condition): fetches the wasm that sits next to the
// generated glue (bundlers follow its `new URL(..., import.meta.url)`), with top-level await, so
// importers need no init call.
import init from "../pkg/celld_edge.js";

await init();

export * from "./api.js";
