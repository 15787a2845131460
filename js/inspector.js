// S3Inspector, the public class for seeing a bucket without a node id or a lease (SPEC §4.2): a thin shell
// over the wasm core (src/bindings/listing.rs), which checks the options, calls the injected fetch and
// builds the listings. This file only forwards calls, and re-creates the core after a trap (instance.js).

import { WasmInspector } from "../pkg/celld_edge.js";
import { currentInstance, hooks, settled, sync, track } from "./instance.js";

export class S3Inspector {
  #options;
  #core;
  #instance;

  constructor(options) {
    this.#options = options;
    this.#core = sync(() => new WasmInspector(options, hooks));
    this.#instance = currentInstance();
  }

  async #run(op) {
    await settled();
    if (this.#instance !== currentInstance()) {
      this.#core = sync(() => new WasmInspector(this.#options, hooks));
      this.#instance = currentInstance();
    }
    const core = this.#core;
    return track(() => op(core));
  }

  listCells() { return this.#run((c) => c.listCells()); }
  listNodes() { return this.#run((c) => c.listNodes()); }
  probe() { return this.#run((c) => c.probe()); }
}
