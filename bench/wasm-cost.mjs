// Benchmark (not a test): what each package costs in the shipped wasm. Rebuilds pkg/'s module with its
// function names kept (wasm-bindgen, then npm binaryen's wasm-opt with Cargo.toml's flags plus -g; the
// code is the same, which this checks against pkg/), files every function under the package its name
// says it comes from, and prints per package: functions, code bytes, and what its code adds to the gzip
// of the module (gzip -9 of all code and data, minus the same without that package's functions).
// Code inlined into another package's function counts for that one (serde_json's parser is inlined
// into our record decoders, for instance). Run after scripts/build: node bench/wasm-cost.mjs
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const root = new URL("..", import.meta.url).pathname;
// wasm-bindgen where scripts/setup installs it, as scripts/build finds it.
const env = { ...process.env, PATH: `${process.env.HOME}/.cargo/bin:${process.env.PATH}` };
const cargoToml = readFileSync(join(root, "Cargo.toml"), "utf8");
const optFlags = JSON.parse(cargoToml.match(/^\[package\.metadata\.wasm-pack\.profile\.release\]\nwasm-opt = (\[[^\]]*\])/m)[1])
  .filter((f) => !f.startsWith("--strip"));

/** Where a function comes from, by its (demangled) name; first match wins. */
const PACKAGES = [
  // serde's `Unexpected::Float` (serde-wasm-bindgen's invalid_type error for a number) is the one
  // caller of f64's Display, and with it core's float printing.
  ["float printing (serde-wasm-bindgen's errors)", /flt2dec|f64 as core[^>]*Display|bignum|diy_float|WithDecimalPoint/],
  ["sha2, hmac (digest, block-buffer)", /(^|[<\s(&])(sha2|hmac|digest|block_buffer|generic_array|crypto_common)(\[|::)/],
  ["serde_json (zmij, itoa)", /serde_json|zmij|itoa/],
  ["serde-wasm-bindgen (hashbrown)", /serde_wasm_bindgen|hashbrown/],
  ["wasm-bindgen-futures (js_sys::futures)", /js_sys::futures|wasm_bindgen_futures/],
  ["web-sys", /web_sys/],
  ["js-sys", /js_sys/],
  // Our exports: wasm-bindgen's shim with our function inlined into it.
  ["celld-edge (exports)", /^(wasmownership|signerio|__celld|signBufferFormat)/i],
  ["wasm-bindgen", /wasm_bindgen|__wbindgen|__wbg|__externref|externref shim|multivalue shim/],
  ["std + dlmalloc", /dlmalloc|(^|[<\s(&])std(\[|::)|__rdl|__rust|__rg_/],
  // Their serde derives and serde_json's parsing of each record are inlined into these.
  ["celld-edge: record decoders (serde_json inlined)", /records::decode_|control::judge|qualify::(read_record|decode_record)/],
  ["celld-edge", /celld_edge/],
  ["serde (generic impls, unknown instance)", /serde/],
  ["core + alloc (fmt, str, collections)", /(^|[<\s(&])(core|alloc)(\[|::)|<char>|<str>|<\[/],
];

function leb(b, i) {
  let r = 0, s = 0, x;
  do { x = b[i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80);
  return [r, i];
}

/** The module's function bodies (with names when it has a name section) and its data section. */
function parse(bytes) {
  const out = { imports: 0, bodies: [], names: new Map(), data: new Uint8Array() };
  for (let i = 8; i < bytes.length;) {
    const id = bytes[i++];
    let n; [n, i] = leb(bytes, i);
    const end = i + n;
    let j = i, count;
    if (id === 2) {
      [count, j] = leb(bytes, j);
      for (let k = 0; k < count; k++) {
        let l; [l, j] = leb(bytes, j); j += l; [l, j] = leb(bytes, j); j += l;
        const kind = bytes[j++];
        if (kind === 0) { out.imports++; [, j] = leb(bytes, j); }
        else if (kind === 1) { j++; const [flags, j2] = leb(bytes, j); [, j] = leb(bytes, j2); if (flags & 1) [, j] = leb(bytes, j); }
        else if (kind === 2) { const [flags, j2] = leb(bytes, j); [, j] = leb(bytes, j2); if (flags & 1) [, j] = leb(bytes, j); }
        else if (kind === 3) j += 2;
        else if (kind === 4) j += 2; // tag
      }
    } else if (id === 10) {
      [count, j] = leb(bytes, j);
      for (let k = 0; k < count; k++) { let l; [l, j] = leb(bytes, j); out.bodies.push(bytes.subarray(j, j + l)); j += l; }
    } else if (id === 11) {
      out.data = bytes.subarray(i, end);
    } else if (id === 0) {
      let l; [l, j] = leb(bytes, j);
      if (new TextDecoder().decode(bytes.subarray(j, j + l)) === "name") {
        j += l;
        while (j < end) {
          const sub = bytes[j++]; let sl; [sl, j] = leb(bytes, j);
          const subEnd = j + sl;
          if (sub === 1) {
            [count, j] = leb(bytes, j);
            for (let k = 0; k < count; k++) {
              let idx; [idx, j] = leb(bytes, j); [l, j] = leb(bytes, j);
              out.names.set(idx, new TextDecoder().decode(bytes.subarray(j, j + l))); j += l;
            }
          }
          j = subEnd;
        }
      }
    }
    i = end;
  }
  return out;
}

const gz = (parts) => gzipSync(Buffer.concat(parts), { level: 9 }).length;

const dir = mkdtempSync(join(tmpdir(), "celld-wasm-cost-"));
try {
  const cargoWasm = join(root, "target/wasm32-unknown-unknown/release/celld_edge.wasm");
  execFileSync("wasm-bindgen", ["--target", "web", "--out-dir", dir, "--omit-default-module-path", cargoWasm], { stdio: "inherit", env });
  const named = join(dir, "named.wasm");
  execFileSync(join(root, "node_modules/.bin/wasm-opt"), [...optFlags, "-g", join(dir, "celld_edge_bg.wasm"), "-o", named], { stdio: "inherit" });
  const m = parse(readFileSync(named));
  const shipped = parse(readFileSync(join(root, "pkg/celld_edge_bg.wasm")));
  const codeOf = (p) => p.bodies.reduce((s, b) => s + b.length, 0);
  if (codeOf(m) !== codeOf(shipped) || m.data.length !== shipped.data.length) {
    throw new Error(`the named build's code (${codeOf(m)} B) or data is not pkg/'s (${codeOf(shipped)} B): run scripts/build first`);
  }
  const groups = new Map(PACKAGES.map(([name]) => [name, []]).concat([["other", []]]));
  m.bodies.forEach((body, k) => {
    const name = m.names.get(k + m.imports) ?? "?";
    const pkg = PACKAGES.find(([, re]) => re.test(name))?.[0] ?? "other";
    groups.get(pkg).push(k);
  });
  const all = gz([...m.bodies, m.data]);
  console.log(`wasm code ${codeOf(m)} B in ${m.bodies.length} functions, data ${m.data.length} B; gzip -9 of code + data ${all} B`);
  console.log(`${"package".padEnd(50)} ${"funcs".padStart(5)} ${"code B".padStart(8)} ${"gzip B".padStart(7)}`);
  for (const [pkg, ks] of groups) {
    if (!ks.length) continue;
    const without = new Set(ks);
    const code = ks.reduce((s, k) => s + m.bodies[k].length, 0);
    const cost = all - gz([...m.bodies.filter((_, k) => !without.has(k)), m.data]);
    console.log(`${pkg.padEnd(50)} ${String(ks.length).padStart(5)} ${String(code).padStart(8)} ${String(cost).padStart(7)}`);
  }
  console.log(`${"data section (strings, tables; not split)".padEnd(50)} ${"".padStart(5)} ${String(m.data.length).padStart(8)} ${String(all - gz(m.bodies)).padStart(7)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
