// Node (>= 20) entry: Node's fetch cannot read file: URLs, so the wasm bytes are read from disk and
// instantiated synchronously before the API is used. No init call for users.
import { readFileSync } from "node:fs";
import { initSync } from "../pkg/celld_edge.js";

initSync({ module: readFileSync(new URL("../pkg/celld_edge_bg.wasm", import.meta.url)) });

export * from "./api.js";
