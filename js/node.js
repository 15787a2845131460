// Node (>= 20) ES module entry: reads the wasm that sits next to the package and instantiates it
// synchronously (no top-level await). No init call for users. `require()` and bundles get js/inline.js
// instead (package.json's conditions), where no file has to be found at run time.
import { readFileSync } from "node:fs";
import { initSync } from "../pkg/celld_edge.js";

initSync({ module: readFileSync(new URL("../pkg/celld_edge_bg.wasm", import.meta.url)) });

export * from "./api.js";
