// The esbuild plugin that makes a bundle of js/ the signing-only entry's: every import of the full wasm's
// glue (pkg/celld_edge.js) is pointed at the signing-only wasm's (pkg/celld_edge_sign.js). Used by
// scripts/lib/bundle-sign.mjs (the package's pkg/sign*.js) and tests/node/sign-trap.test.mjs (an entry
// that also exports the signing-only wasm's test trap).
import { resolve } from "node:path";

export const signGlue = {
  name: "celld-edge-sign-glue",
  setup(b) {
    b.onResolve({ filter: /\/pkg\/celld_edge\.js$/ }, (args) => ({ path: resolve(args.resolveDir, args.path).replace(/celld_edge\.js$/, "celld_edge_sign.js") }));
  },
};
