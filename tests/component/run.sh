#!/usr/bin/env bash
# The `component` suite of scripts/test (which starts the servers and puts the venv on PATH): builds the
# WebAssembly component and the proxy example, then runs it in wasmtime-py (test_wasmtime.py: ownership,
# signing, the import list, the proxy under `wasmtime serve`), in Node through jco (jco.test.mjs), and in
# the mixed race against JS nodes (race.test.mjs). Needs scripts/build's pkg/ for the JS nodes.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build-component
(cd tests/component && python3 -m unittest -v test_wasmtime)
# The README's Python host, as a reader runs it, against the real store.
out=$(S3_ENDPOINT=$CELLD_TEST_REAL_ENDPOINT S3_BUCKET=$CELLD_TEST_REAL_BUCKET S3_PREFIX=readme-host-$$-$RANDOM/ AWS_ACCESS_KEY_ID=$CELLD_TEST_REAL_KEY_ID \
  AWS_SECRET_ACCESS_KEY=$CELLD_TEST_REAL_SECRET CELLD_COMPONENT=target/component/celld_edge.wasm python3 examples/component/host.py)
[[ $out == "cell-1: applied" ]] || { echo "component: examples/component/host.py printed '$out', not 'cell-1: applied'" >&2; exit 1; }
echo "component: examples/component/host.py: $out"
node --test tests/component/jco.test.mjs tests/component/race.test.mjs
