// Deno (>= 2) entry: reads the wasm next to the package (needs --allow-read for it) and instantiates it
// synchronously. No init call for users.
import { initSync } from "../pkg/celld_edge.js";

initSync({ module: Deno.readFileSync(new URL("../pkg/celld_edge_bg.wasm", import.meta.url)) });

export * from "./api.js";
