// Bundles the signing-only entry `celld-edge/sign` (scripts/build, after both wasm-pack builds): each
// js/sign-*.js entry with js/sign.js, instance.js, aws-client.js and error.js into one file of pkg/, with
// the imports of the full wasm's glue (pkg/celld_edge.js) pointed at the signing-only wasm's
// (pkg/celld_edge_sign.js): the same JS over the other wasm, one lifecycle per wasm instance
// (docs/packaging.md, "The signing-only entry"). Minified (weight is this entry's point: SPEC §4.5's
// 40 KiB, bench/size.mjs): whitespace and syntax by esbuild, then the local variables' and parameters'
// names by terser; every function, class, method and top-level name is kept, so stack traces still name
// each function.
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { minify } from "terser";
import { signGlue } from "./sign-glue.mjs";

// The parser terser itself depends on (so always the one installed with it).
const acorn = createRequire(fileURLToPath(import.meta.resolve("terser")))("acorn");

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = (f) => join(root, "pkg", f);

writeFileSync(pkg("wasm-sign-inline.js"), `// The wasm of pkg/celld_edge_sign_bg.wasm as base64 (scripts/build).\nexport default "${readFileSync(pkg("celld_edge_sign_bg.wasm")).toString("base64")}";\n`);

/** Stands in for `#` while terser runs: it would rename private members too, and a private method's name
 * is what a stack trace shows for it. */
const PRIVATE = "__celldPrivate_";

/**
 * `code` with its local variables and parameters renamed (terser's mangler: no compression, so nothing
 * else changes). Kept: names at the top level (`toplevel: false`: the module's own names, as esbuild
 * wrote them), every function's and class's name (`keep_fnames`, `keep_classnames`), and private member
 * names (hidden from terser as ordinary property names, then put back).
 */
async function mangleLocals(code, sourceType) {
  const found = [];
  (function visit(node) {
    if (node.type === "PrivateIdentifier") found.push(node);
    if (node.type === "BinaryExpression" && node.left.type === "PrivateIdentifier") throw new Error("bundle-sign: `#x in obj` would not survive PRIVATE");
    for (const v of Object.values(node)) {
      for (const child of Array.isArray(v) ? v : [v]) if (child !== null && typeof child?.type === "string") visit(child);
    }
  })(acorn.parse(code, { ecmaVersion: "latest", sourceType }));
  if (code.includes(PRIVATE)) throw new Error(`bundle-sign: the bundle already holds ${PRIVATE}`);
  let hidden = code;
  // A space first: minified code may run `async#m` together, which `async__celldPrivate_m` would not parse as.
  for (const { start, end, name } of found.sort((a, b) => b.start - a.start)) hidden = `${hidden.slice(0, start)} ${PRIVATE}${name}${hidden.slice(end)}`;
  const out = (await minify(hidden, { module: false, compress: false, mangle: { toplevel: false, keep_fnames: true, keep_classnames: true }, format: { comments: false } })).code;
  const shown = out.replaceAll(PRIVATE, "#");
  if (out.split(PRIVATE).length - 1 !== found.length) throw new Error("bundle-sign: terser changed the private member names");
  return shown;
}

const common = {
  bundle: true, absWorkingDir: root, logLevel: "warning", plugins: [signGlue], target: "es2022", minifyWhitespace: true, minifySyntax: true, write: false,
};
const bundles = [
  // Deno, browsers, bundlers, and Node's "module" condition: no file to find at run time.
  { ...common, entryPoints: ["js/sign-inline.js"], format: "esm", platform: "neutral", outfile: pkg("sign.js") },
  { ...common, entryPoints: ["js/sign-inline.js"], format: "cjs", platform: "node", target: "node20", outfile: pkg("sign.cjs") },
  { ...common, entryPoints: ["js/sign-node.js"], format: "esm", platform: "node", target: "node20", outfile: pkg("sign-node.js") },
  // The .wasm import stays for wrangler, which makes it a compiled module; its path is the same from pkg/.
  { ...common, entryPoints: ["js/sign-workerd.js"], format: "esm", platform: "neutral", external: ["*.wasm"], outfile: pkg("sign-workerd.js") },
];
await Promise.all(bundles.map(async (options) => {
  const [file] = (await build(options)).outputFiles;
  writeFileSync(options.outfile, await mangleLocals(file.text, options.format === "esm" ? "module" : "script"));
}));

// The declarations: the signing part of js/index.d.ts (without its ownership re-export), for CommonJS
// importers (js/sign.d.ts re-exports the same names for ES modules).
const dts = readFileSync(join(root, "js/index.d.ts"), "utf8").replace(/^export \* from "\.\/ownership\.js";\n/m, "");
writeFileSync(pkg("sign.d.cts"), dts);
