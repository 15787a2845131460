// `celld-edge/sign` for Node's ES module loader (bundled into pkg/sign-node.js): reads the signing-only
// wasm beside it, as node.js does the full one.
import { readFileSync } from "node:fs";
import { initSync } from "../pkg/celld_edge_sign.js";

initSync({ module: readFileSync(new URL("../pkg/celld_edge_sign_bg.wasm", import.meta.url)) });

export * from "./sign-api.js";
