# Sourced by scripts/test: starts the local S3 servers the tests need on free loopback ports, waits until
# they answer, exports their coordinates, and stops them (by PID, nothing else) when the shell exits.
# Each test takes the server that has what it needs:
#   versitygw (CELLD_TEST_REAL_*) — a real S3 server: checks every signature (headers, presigned URLs,
#     request times), applies conditional writes atomically, answers like AWS where the tests look (411 to
#     a chunked body without a length, 404 NoSuchKey to If-Match on a missing key). The shared ownership,
#     listing, trap, credentials, signing and AwsClient checks run against it in every runtime (Chromium
#     through a CORS pass-through), and so do both races (tests/node/race.test.mjs) and the dialect tests.
#     CELLD_TEST_VERSIONED_BUCKET is a bucket of it with versioning on, whose deleted keys still count for
#     conditions: a store the probe must refuse (tests/node/probe.test.mjs).
#   ministack (CELLD_TEST_ATOMIC_*) — conditional writes applied atomically, no signature checks, fast:
#     where many requests or a rewritten request matter more than signatures (authority checks, quick
#     starts and examples, CLI, memory, benches, a listing past 1000 keys, the Tigris imitation).
#   moto in auth mode (CELLD_TEST_STRICT_*) — checks header signatures but not request times or presigned
#     URLs, and its conditional writes race now and then: the ownership and listing checks' unprobed paths
#     (probe: false), the one server that stores a chunked body without a length, the store behind the
#     fault front's skewed clock, and the native Rust and wasm suites' signature checks.
#   s3s-fs (CELLD_TEST_PRESIGN_*) — checks header signatures and presigned URLs, and its conditional
#     writes race: the store the probe must refuse, and a second, independent SigV4 verifier.
#   store fronts (CELLD_TEST_THROTTLE_ / _R2_ / _LOSSY_ / _ROUGH_ / _DIALECT_ENDPOINT; scripts/lib/store-front.mjs) —
#     versitygw throttled like R2 and S3 (or R2 alone), losing answers to applied writes, or both; ministack half-honouring
#     conditions, by the key's prefix (docs/load.md): the load and dialect tests.
# Every server gets a CORS pass-through for Chromium (…_BROWSER_ENDPOINT).
# Callers that need their own EXIT trap must call celld_stop_servers from it.

CELLD_VENV=${CELLD_VENV:-$HOME/.cache/celld-edge/venv}
CELLD_CARGO_ROOT=${CELLD_CARGO_ROOT:-$HOME/.cache/celld-edge/cargo}
CELLD_VERSITYGW=${CELLD_VERSITYGW:-$HOME/.cache/celld-edge/go/bin/versitygw}
_celld_pids=()
_celld_tmp=

celld_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# celld_wait_port PORT NAME LOG: until something accepts TCP connections there (30 s at most).
celld_wait_port() {
  local i
  for ((i = 0; i < 300; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "servers: $2 did not start on port $1; its log:" >&2
  tail -20 "$3" >&2
  return 1
}

celld_stop_servers() {
  local pid
  for pid in "${_celld_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${_celld_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  _celld_pids=()
  [[ -n $_celld_tmp ]] && rm -rf "$_celld_tmp"
  _celld_tmp=
}

celld_start_servers() {
  local root port creds
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  _celld_tmp=$(mktemp -d -t celld-servers.XXXXXX)
  trap celld_stop_servers EXIT

  port=$(celld_free_port)
  mkdir -p "$_celld_tmp/ministack"
  BIND_HOST=127.0.0.1 GATEWAY_PORT=$port TMPDIR=$_celld_tmp/ministack \
    "$CELLD_VENV/bin/ministack" >"$_celld_tmp/ministack.log" 2>&1 &
  _celld_pids+=($!)
  celld_wait_port "$port" ministack "$_celld_tmp/ministack.log" || return 1
  export CELLD_TEST_ATOMIC_ENDPOINT=http://127.0.0.1:$port CELLD_TEST_ATOMIC_BUCKET=celld-atomic
  export CELLD_TEST_ATOMIC_KEY_ID=celld-test CELLD_TEST_ATOMIC_SECRET=celld-test-secret
  "$CELLD_VENV/bin/python" "$root/scripts/lib/s3setup.py" plain "$CELLD_TEST_ATOMIC_ENDPOINT" "$CELLD_TEST_ATOMIC_BUCKET" || return 1
  celld_cors_proxy "$port" ministack CELLD_TEST_ATOMIC_BROWSER_ENDPOINT || return 1

  port=$(celld_free_port)
  "$CELLD_VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$_celld_tmp/moto.log" 2>&1 &
  _celld_pids+=($!)
  celld_wait_port "$port" moto "$_celld_tmp/moto.log" || return 1
  export CELLD_TEST_STRICT_ENDPOINT=http://127.0.0.1:$port CELLD_TEST_STRICT_BUCKET=celld-strict
  creds=$("$CELLD_VENV/bin/python" "$root/scripts/lib/s3setup.py" strict "$CELLD_TEST_STRICT_ENDPOINT" "$CELLD_TEST_STRICT_BUCKET") || return 1
  export CELLD_TEST_STRICT_KEY_ID=${creds% *} CELLD_TEST_STRICT_SECRET=${creds#* }

  celld_cors_proxy "$port" moto CELLD_TEST_STRICT_BROWSER_ENDPOINT || return 1

  port=$(celld_free_port)
  mkdir -p "$_celld_tmp/s3s/celld-presign"
  export CELLD_TEST_PRESIGN_ENDPOINT=http://127.0.0.1:$port CELLD_TEST_PRESIGN_BUCKET=celld-presign
  export CELLD_TEST_PRESIGN_KEY_ID=celld-s3s-key CELLD_TEST_PRESIGN_SECRET=celld-s3s-secret/+=
  "$CELLD_CARGO_ROOT/bin/s3s-fs" --host 127.0.0.1 --port "$port" --access-key "$CELLD_TEST_PRESIGN_KEY_ID" \
    --secret-key "$CELLD_TEST_PRESIGN_SECRET" "$_celld_tmp/s3s" >"$_celld_tmp/s3s-fs.log" 2>&1 &
  _celld_pids+=($!)
  celld_wait_port "$port" s3s-fs "$_celld_tmp/s3s-fs.log" || return 1
  celld_cors_proxy "$port" s3s-fs CELLD_TEST_PRESIGN_BROWSER_ENDPOINT || return 1

  port=$(celld_free_port)
  mkdir -p "$_celld_tmp/vgw" "$_celld_tmp/vgw-versions"
  export CELLD_TEST_REAL_ENDPOINT=http://127.0.0.1:$port CELLD_TEST_REAL_BUCKET=celld-real
  export CELLD_TEST_REAL_KEY_ID=celld-vgw-key CELLD_TEST_REAL_SECRET=celld-vgw-secret/+=
  export CELLD_TEST_VERSIONED_BUCKET=celld-versioned
  "$CELLD_VERSITYGW" --access "$CELLD_TEST_REAL_KEY_ID" --secret "$CELLD_TEST_REAL_SECRET" --port "127.0.0.1:$port" \
    posix --versioning-dir "$_celld_tmp/vgw-versions" "$_celld_tmp/vgw" >"$_celld_tmp/versitygw.log" 2>&1 &
  _celld_pids+=($!)
  celld_wait_port "$port" versitygw "$_celld_tmp/versitygw.log" || return 1
  CELLD_SETUP_KEY_ID=$CELLD_TEST_REAL_KEY_ID CELLD_SETUP_SECRET=$CELLD_TEST_REAL_SECRET "$CELLD_VENV/bin/python" \
    "$root/scripts/lib/s3setup.py" signed "$CELLD_TEST_REAL_ENDPOINT" "$CELLD_TEST_REAL_BUCKET" "$CELLD_TEST_VERSIONED_BUCKET" || return 1
  celld_cors_proxy "$port" versitygw CELLD_TEST_REAL_BROWSER_ENDPOINT || return 1
  # Stores under load and in their dialects (scripts/lib/store-front.mjs): versitygw throttled like R2 and
  # S3, versitygw losing answers to applied writes, both at once, and ministack half-honouring conditions.
  celld_store_front "$port" throttle CELLD_TEST_THROTTLE_ENDPOINT || return 1
  celld_store_front "$port" r2 CELLD_TEST_R2_ENDPOINT || return 1
  celld_store_front "$port" lose CELLD_TEST_LOSSY_ENDPOINT || return 1
  celld_store_front "$port" throttle,lose CELLD_TEST_ROUGH_ENDPOINT || return 1
  celld_store_front "${CELLD_TEST_ATOMIC_ENDPOINT##*:}" dialect CELLD_TEST_DIALECT_ENDPOINT || return 1

  echo "servers: versitygw $CELLD_TEST_REAL_ENDPOINT, ministack $CELLD_TEST_ATOMIC_ENDPOINT, moto (auth) $CELLD_TEST_STRICT_ENDPOINT, s3s-fs $CELLD_TEST_PRESIGN_ENDPOINT; browser proxies $CELLD_TEST_REAL_BROWSER_ENDPOINT, $CELLD_TEST_ATOMIC_BROWSER_ENDPOINT, $CELLD_TEST_STRICT_BROWSER_ENDPOINT, $CELLD_TEST_PRESIGN_BROWSER_ENDPOINT"
}

# celld_cors_proxy UPSTREAM_PORT NAME VAR: starts a CORS pass-through to it and exports its URL as VAR
# (not via $(...): the proxy's PID must be recorded in this shell).
celld_cors_proxy() {
  local root out i
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  out=$_celld_tmp/cors-$2
  node "$root/scripts/lib/cors-proxy.mjs" "$1" >"$out.port" 2>"$out.log" &
  _celld_pids+=($!)
  for ((i = 0; i < 100; i++)); do [[ -s $out.port ]] && break; sleep 0.1; done
  [[ -s $out.port ]] || { echo "servers: CORS proxy for $2 did not start" >&2; return 1; }
  export "$3=http://127.0.0.1:$(<"$out.port")"
}

# celld_store_front UPSTREAM_PORT MODES VAR: starts scripts/lib/store-front.mjs in front of that server and
# exports its URL as VAR (recorded in this shell, like the CORS proxies).
celld_store_front() {
  local root out i
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  out=$_celld_tmp/front-$3
  node "$root/scripts/lib/store-front.mjs" "$1" "$2" >"$out.port" 2>"$out.log" &
  _celld_pids+=($!)
  for ((i = 0; i < 100; i++)); do [[ -s $out.port ]] && break; sleep 0.1; done
  [[ -s $out.port ]] || { echo "servers: store front $2 did not start" >&2; return 1; }
  export "$3=http://127.0.0.1:$(<"$out.port")"
}
