#!/usr/bin/env bash
# The `component` suite of scripts/test (which starts the servers and puts the venv on PATH): builds the
# WebAssembly component and the proxy example, then runs it in wasmtime-py (test_wasmtime.py: ownership,
# signing, the import list, the proxy under `wasmtime serve`), in Node through jco (jco.test.mjs), and in
# the mixed race against JS nodes (race.test.mjs). Needs scripts/build's pkg/ for the JS nodes.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build-component
(cd tests/component && python3 -m unittest -v test_wasmtime)
node --test tests/component/jco.test.mjs tests/component/race.test.mjs
