// Bundles the signing-only entry `celld-edge/sign` (scripts/build, after both wasm-pack builds): each
// js/sign-*.js entry with js/sign.js, instance.js, aws-client.js and error.js into one file of pkg/, with
// the imports of the full wasm's glue (pkg/celld_edge.js) pointed at the signing-only wasm's
// (pkg/celld_edge_sign.js): the same JS over the other wasm, one lifecycle per wasm instance
// (docs/packaging.md, "The signing-only entry"). Whitespace and syntax minified (weight is this entry's
// point: SPEC §4.5's 40 KiB, bench/size.mjs), names kept, so stack traces still name each function.
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = (f) => join(root, "pkg", f);

const signGlue = {
  name: "celld-edge-sign-glue",
  setup(b) {
    b.onResolve({ filter: /\/pkg\/celld_edge\.js$/ }, (args) => ({ path: resolve(args.resolveDir, args.path).replace(/celld_edge\.js$/, "celld_edge_sign.js") }));
  },
};

writeFileSync(pkg("wasm-sign-inline.js"), `// The wasm of pkg/celld_edge_sign_bg.wasm as base64 (scripts/build).\nexport default "${readFileSync(pkg("celld_edge_sign_bg.wasm")).toString("base64")}";\n`);

const common = {
  bundle: true, absWorkingDir: root, logLevel: "warning", plugins: [signGlue], target: "es2022", minifyWhitespace: true, minifySyntax: true,
};
await Promise.all([
  // Deno, browsers, bundlers, and Node's "module" condition: no file to find at run time.
  build({ ...common, entryPoints: ["js/sign-inline.js"], format: "esm", platform: "neutral", outfile: pkg("sign.js") }),
  build({ ...common, entryPoints: ["js/sign-inline.js"], format: "cjs", platform: "node", target: "node20", outfile: pkg("sign.cjs") }),
  build({ ...common, entryPoints: ["js/sign-node.js"], format: "esm", platform: "node", target: "node20", outfile: pkg("sign-node.js") }),
  // The .wasm import stays for wrangler, which makes it a compiled module; its path is the same from pkg/.
  build({ ...common, entryPoints: ["js/sign-workerd.js"], format: "esm", platform: "neutral", external: ["*.wasm"], outfile: pkg("sign-workerd.js") }),
]);

// The declarations: the signing part of js/index.d.ts (without its ownership re-export), for CommonJS
// importers (js/sign.d.ts re-exports the same names for ES modules).
const dts = readFileSync(join(root, "js/index.d.ts"), "utf8").replace(/^export \* from "\.\/ownership\.js";\n/m, "");
writeFileSync(pkg("sign.d.cts"), dts);
