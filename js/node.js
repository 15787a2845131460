// Node (>= 20) entry: Node's fetch cannot read file: URLs, so the wasm bytes are read from disk and
// instantiated synchronously before the API is used. No init call for users.
// node:fs comes from process.getBuiltinModule where Node has it (>= 20.16): an `import` of it costs the
// ESM loader ~2 ms of start-up CPU.
import { initSync } from "../pkg/celld_edge.js";

const { readFileSync } = process.getBuiltinModule?.("node:fs") ?? (await import("node:fs"));
initSync({ module: readFileSync(new URL("../pkg/celld_edge_bg.wasm", import.meta.url)) });

export * from "./api.js";
