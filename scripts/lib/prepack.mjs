// npm's prepack hook: refuses to pack a tarball without the built wasm and glue (scripts/build makes
// them), so that `npm pack` before a build fails loudly instead of shipping a package that cannot load.
import { existsSync, statSync } from "node:fs";

const needed = ["pkg/celld_edge_bg.wasm", "pkg/celld_edge.js", "pkg/node.js"];
const missing = needed.filter((f) => !existsSync(new URL(`../../${f}`, import.meta.url)) || statSync(new URL(`../../${f}`, import.meta.url)).size === 0);
if (missing.length > 0) {
  console.error(`prepack: ${missing.join(", ")} missing: run scripts/build before npm pack`);
  process.exit(1);
}
