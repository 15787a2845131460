#!/usr/bin/env bash
# The package as users get it: `npm pack` the repo root (after scripts/build), check the tarball holds what
# users need and nothing else, install it into a fresh temporary project, and use it there from Node,
# Deno, TypeScript and workerd (Workers through an R2 binding), each through its own export condition.
# Prints "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/package
tmp=$(mktemp -d -t celld-package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { # check NAME COMMAND...
  local name=$1
  shift
  if out=$("$@" 2>&1); then
    echo "ok - $name"
    passed=$((passed + 1))
  else
    echo "not ok - $name"
    echo "$out" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

tarball=$(cd "$tmp" && npm pack --silent "$root") || { echo "npm pack failed"; exit 1; }
tar tzf "$tmp/$tarball" | sort >"$tmp/contents"
echo "tarball $tarball: $(wc -c <"$tmp/$tarball") bytes gzipped, $(wc -l <"$tmp/contents") files, $(tar xzOf "$tmp/$tarball" | wc -c) bytes unpacked"

contents_ok() {
  local want
  for want in package/package.json package/README.md package/js/api.js package/js/node.js package/js/inline.js \
    package/js/workerd.js package/js/index.d.ts package/js/ownership.js package/js/ownership.d.ts \
    package/pkg/celld_edge.js package/pkg/celld_edge_bg.wasm package/pkg/node.js package/pkg/node.cjs package/pkg/wasm-inline.js \
    package/pkg/index.d.cts package/LICENSE-MIT package/LICENSE-APACHE package/js/inspector.js package/js/sign.js package/bin/celld-edge.mjs; do
    grep -qx "$want" "$tmp/contents" || { echo "missing $want"; return 1; }
  done
  if grep -Ev '^package/(package\.json|README\.md|LICENSE-(MIT|APACHE)|bin/celld-edge\.mjs|js/[^/]+\.(js|d\.ts)|pkg/[^/]+\.(js|cjs|d\.cts|wasm))$' "$tmp/contents"; then
    echo "^ files users do not need"
    return 1
  fi
}
check "tarball holds bin/celld-edge.mjs, js/, pkg/*.js, pkg/*.wasm, README, the licenses and nothing else" contents_ok

# prepack must refuse a checkout that was never built (a tarball without the wasm cannot load).
unbuilt() {
  mkdir -p "$tmp/unbuilt/scripts/lib" && cp -r "$root/package.json" "$root/js" "$tmp/unbuilt/" &&
    cp "$root/scripts/lib/prepack.mjs" "$tmp/unbuilt/scripts/lib/" || return 1
  if out=$(cd "$tmp/unbuilt" && npm pack --dry-run 2>&1); then echo "npm pack without pkg/ succeeded: $out"; return 1; fi
  grep -q "run scripts/build" <<<"$out" || { echo "no pointer to scripts/build in: $out"; return 1; }
}
check "npm pack refuses a checkout without the built wasm (prepack)" unbuilt

mkdir "$tmp/app"
cp "$here/app.mjs" "$here/app.ts" "$here/app.cjs" "$here/app-cjs.ts" "$here/node-app.mjs" "$here/browser-app.js" "$tmp/app/"
(cd "$tmp/app" && npm init -y >/dev/null && npm pkg set type=module >/dev/null &&
  npm install --silent --no-audit --no-fund "../$tarball") >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; echo "installing the tarball failed"; exit 1; }

check "Node imports the installed package (node condition: the bundled entry) and signs" \
  bash -c "cd '$tmp/app' && node app.mjs pkg/node.js"
check "Deno imports the installed package (deno condition, no permissions) and signs" \
  bash -c "cd '$tmp/app' && DENO_NO_UPDATE_CHECK=1 '$root/node_modules/.bin/deno' run app.mjs js/inline.js"
check "CommonJS require() of the installed package (require condition) signs" \
  bash -c "cd '$tmp/app' && node app.cjs"
sign_only='const want = "AWS4-HMAC-SHA256 Credential=a/20150830/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=";
  const got = m.signRequest({ url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z" }).headers.authorization;
  if (!got.startsWith(want) || m.S3Ownership !== undefined) throw new Error(got);'
check "celld-edge/sign from the installed package: import (node condition), require() and Deno sign, with no ownership API" \
  bash -c "cd '$tmp/app' && node --input-type=module -e 'import * as m from \"celld-edge/sign\"; $sign_only' &&
    node -e 'const m = require(\"celld-edge/sign\"); $sign_only' &&
    DENO_NO_UPDATE_CHECK=1 '$root/node_modules/.bin/deno' eval 'const m = await import(\"celld-edge/sign\"); $sign_only'"
check "esbuild --platform=node --bundle output runs from another folder (no wasm file beside it)" \
  bash -c "cd '$tmp/app' && '$root/node_modules/.bin/esbuild' --bundle --platform=node --format=esm --log-level=error node-app.mjs --outfile='$tmp/elsewhere/app.mjs' && cd '$tmp/elsewhere' && node app.mjs"
for bundler in esbuild-iife esbuild-esm vite webpack; do
  check "$bundler bundles a browser program with no manual step, and it signs in Chromium" \
    node "$here/bundlers.mjs" "$tmp/app" "$root" "$bundler"
done
check "TypeScript (strict) type-checks a program against the shipped declarations" \
  "$root/node_modules/.bin/tsc" --strict --noEmit --target es2022 --module nodenext --moduleResolution nodenext "$tmp/app/app.ts"
# A Node-only setup as @tsconfig/node* writes it ("lib": ["es2022"], no DOM; fetch, Request, Response and
# AbortSignal come from @types/node) with skipLibCheck off: the declarations must name no DOM-only type.
node_lib=(--strict --noEmit --skipLibCheck false --lib es2022 --types node --typeRoots "$root/node_modules/@types" --target es2022)
check "TypeScript with a Node-only lib (es2022 + @types/node, no DOM, skipLibCheck false) type-checks the shipped declarations" \
  "$root/node_modules/.bin/tsc" "${node_lib[@]}" --module nodenext --moduleResolution nodenext "$tmp/app/app.ts"
mkdir "$tmp/cjs-app"
cp "$here/app-cjs.ts" "$tmp/cjs-app/"
ln -s "$tmp/app/node_modules" "$tmp/cjs-app/node_modules"
echo '{ "name": "cjs-app", "type": "commonjs" }' >"$tmp/cjs-app/package.json"
check "TypeScript in a CommonJS project (--module node16) type-checks against the require declarations" \
  "$root/node_modules/.bin/tsc" --strict --noEmit --target es2022 --module node16 --moduleResolution node16 "$tmp/cjs-app/app-cjs.ts"
check "TypeScript in a CommonJS project with a Node-only lib (no DOM) type-checks against pkg/index.d.cts" \
  "$root/node_modules/.bin/tsc" "${node_lib[@]}" --module node16 --moduleResolution node16 "$tmp/cjs-app/app-cjs.ts"

# Workers with an R2 binding and no keys, from the installed tarball: the README's quick start (worker.js
# and its wrangler.toml, equal to the README's blocks) and a Worker beside the same wrangler.toml that runs a
# node's whole life, each bundled by wrangler in the project and run as two isolates in workerd.
workers() {
  mkdir -p "$tmp/app/quickstart" "$tmp/app/lifecycle" &&
    cp "$root/examples/quickstart/worker.js" "$root/examples/quickstart/wrangler.toml" "$tmp/app/quickstart/" &&
    cp "$here/worker-lifecycle.js" "$tmp/app/lifecycle/worker.js" && cp "$root/examples/quickstart/wrangler.toml" "$tmp/app/lifecycle/" &&
    node "$here/workers.mjs" "$tmp/app" "$root"
}
check "Workers through an R2 binding, no keys, from the installed tarball and the README's wrangler.toml: the quick start and a node's life (acquire, racing claims, renew, release, close) in two isolates" workers

# The command line as a user runs it from the project: `npx celld-edge` (the package's "bin").
cli() {
  local out rc
  out=$(cd "$tmp/app" && npx --no-install celld-edge --help) || { echo "--help failed: $out"; return 1; }
  grep -q '^Usage: celld-edge' <<<"$out" || { echo "no usage in: $out"; return 1; }
  out=$(cd "$tmp/app" && env -u AWS_ACCESS_KEY_ID npx --no-install celld-edge inspect --endpoint http://127.0.0.1:9 --bucket b 2>&1)
  rc=$?
  ((rc == 2)) && grep -q 'AWS_ACCESS_KEY_ID' <<<"$out" || { echo "inspect without credentials: exit $rc, $out"; return 1; }
  out=$(cd "$tmp/app" && AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b npx --no-install celld-edge inspect --endpoint ftp://x --bucket bkt 2>&1)
  rc=$?
  ((rc == 2)) && grep -q 'invalid-input' <<<"$out" || { echo "the library did not load or check the endpoint: exit $rc, $out"; return 1; }
  out=$(cd "$tmp/app" && npx --no-install celld-edge inspect --endpoint http://127.0.0.1:9 --bukcet bkt 2>&1)
  rc=$?
  ((rc == 2)) && grep -q 'unknown option --bukcet: did you mean --bucket?' <<<"$out" && ! grep -q positional <<<"$out" ||
    { echo "a mistyped option: exit $rc, $out"; return 1; }
  out=$(cd "$tmp/app" && AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b npx --no-install celld-edge inspect --endpoint ftp://x --bucket bkt --json 2>/dev/null)
  rc=$?
  ((rc == 2)) && node -e 'const { error } = JSON.parse(process.argv[1]); if (error.code !== "invalid-input") process.exit(1)' "$out" ||
    { echo "--json error: exit $rc, $out"; return 1; }
}
check "npx celld-edge runs the packaged CLI (help, bad and mistyped arguments, --json errors, the library loads)" cli

# npx celld-edge against ministack: a node of the installed package claims a cell, probe qualifies the
# prefix, inspect shows the cell, its owner and epoch.
cli_store() {
  local prefix=t-pkg-cli-$RANDOM$RANDOM/ out
  [[ -n ${CELLD_TEST_ATOMIC_ENDPOINT:-} ]] || { echo "CELLD_TEST_ATOMIC_ENDPOINT is not set: run through scripts/test"; return 1; }
  export AWS_ACCESS_KEY_ID=$CELLD_TEST_ATOMIC_KEY_ID AWS_SECRET_ACCESS_KEY=$CELLD_TEST_ATOMIC_SECRET
  local args=(--endpoint "$CELLD_TEST_ATOMIC_ENDPOINT" --bucket "$CELLD_TEST_ATOMIC_BUCKET" --prefix "$prefix")
  out=$(cd "$tmp/app" && npx --no-install celld-edge probe "${args[@]}" 2>&1) || { echo "probe: $out"; return 1; }
  grep -q "^Qualified: .* honours conditional writes" <<<"$out" || { echo "probe said: $out"; return 1; }
  out=$(cd "$tmp/app" && npx --no-install celld-edge probe "${args[@]}" 2>&1) || { echo "probe again: $out"; return 1; }
  grep -q "^It was already qualified at .*: this probe qualified it again" <<<"$out" || { echo "probe again said: $out"; return 1; }
  (cd "$tmp/app" && PREFIX=$prefix node --input-type=module -e '
    import { S3Ownership } from "celld-edge";
    const e = process.env;
    const own = new S3Ownership({ endpoint: e.CELLD_TEST_ATOMIC_ENDPOINT, bucket: e.CELLD_TEST_ATOMIC_BUCKET, accessKeyId: e.AWS_ACCESS_KEY_ID,
      secretAccessKey: e.AWS_SECRET_ACCESS_KEY, prefix: e.PREFIX, node: "pkg-node" });
    await own.acquireLease();
    await own.claim("pkg-cell");
    await own.claim("pkg-cell");') || return 1
  out=$(cd "$tmp/app" && npx --no-install celld-edge inspect "${args[@]}" 2>&1) || { echo "inspect: $out"; return 1; }
  grep -Eq '^pkg-cell +pkg-node +2 +live' <<<"$out" || { echo "inspect said: $out"; return 1; }
  out=$(cd "$tmp/app" && npx --no-install celld-edge inspect "${args[@]}" --json 2>&1) || { echo "inspect --json: $out"; return 1; }
  node -e 'const v = JSON.parse(process.argv[1]); if (v.nodes[0].node !== "pkg-node" || v.cells[0].epoch !== 2) process.exit(1)' "$out" ||
    { echo "inspect --json said: $out"; return 1; }
}
check "npx celld-edge probe and inspect against ministack, from the installed tarball" cli_store

# Records anyone with write access can forge: a lease whose addr and an owner record whose node carry
# terminal escapes (OSC 52 clipboard write, screen clear). The installed CLI prints none of them raw.
cli_escapes() {
  local prefix=t-pkg-esc-$RANDOM$RANDOM/ out
  [[ -n ${CELLD_TEST_ATOMIC_ENDPOINT:-} ]] || { echo "CELLD_TEST_ATOMIC_ENDPOINT is not set: run through scripts/test"; return 1; }
  export AWS_ACCESS_KEY_ID=$CELLD_TEST_ATOMIC_KEY_ID AWS_SECRET_ACCESS_KEY=$CELLD_TEST_ATOMIC_SECRET
  (cd "$tmp/app" && PREFIX=$prefix node --input-type=module -e '
    import { signRequest } from "celld-edge";
    const e = process.env;
    const put = async (key, value) => {
      const body = JSON.stringify(value);
      const url = `${e.CELLD_TEST_ATOMIC_ENDPOINT}/${e.CELLD_TEST_ATOMIC_BUCKET}/${key.split("/").map(encodeURIComponent).join("/")}`;
      const s = signRequest({ method: "PUT", url, body, region: "us-east-1", accessKeyId: e.AWS_ACCESS_KEY_ID, secretAccessKey: e.AWS_SECRET_ACCESS_KEY });
      const res = await fetch(s.url, { method: "PUT", headers: s.headers, body });
      if (!res.ok) throw new Error(`PUT ${key}: ${res.status}`);
    };
    await put(`${e.PREFIX}nodes/n1.json`, { node: "n1", expires_ms: Date.now() + 600000, addr: "\u001b]52;c;ZWNobyBwd25lZA==\u0007h:1" });
    await put(`${e.PREFIX}cells/ok/own.json`, { node: "n1", epoch: 1 });
    await put(`${e.PREFIX}cells/forged/own.json`, { node: "\u001b[2J\u001b]0;title\u0007", epoch: 1 });
    await put(`${e.PREFIX}cells/ok/data/e1/\u0001\u001b[2J`, { data: 1 });') || return 1
  out=$(cd "$tmp/app" && npx --no-install celld-edge inspect --endpoint "$CELLD_TEST_ATOMIC_ENDPOINT" --bucket "$CELLD_TEST_ATOMIC_BUCKET" --prefix "$prefix" 2>&1) ||
    { echo "inspect: $out"; return 1; }
  if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$out"; then echo "raw control characters in: $(od -c <<<"$out" | head -20)"; return 1; fi
  grep -q 'x1b\]52;c;' <<<"$out" && grep -Eq '^forged +- +- +corrupt' <<<"$out" && grep -Eq '^ok +n1 +1 +live' <<<"$out" ||
    { echo "inspect said: $out"; return 1; }
}
check "npx celld-edge inspect escapes what forged records hold, from the installed tarball" cli_escapes

echo "$passed passed, $failed failed"
((failed == 0))
