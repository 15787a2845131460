# Sourced by scripts/test: starts the local S3 servers the tests need on free loopback ports, waits until
# they answer, exports their coordinates, and stops them (by PID, nothing else) when the shell exits.
#   ministack — conditional writes applied atomically (races), no signature checks
#   moto in auth mode — checks every SigV4 signature (wrong secret → 403), plus a CORS pass-through for
#   browsers (moto authenticates preflights and fails them)
# Callers that need their own EXIT trap must call celld_stop_servers from it.

CELLD_VENV=${CELLD_VENV:-$HOME/.cache/celld-edge/venv}
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

  port=$(celld_free_port)
  "$CELLD_VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$_celld_tmp/moto.log" 2>&1 &
  _celld_pids+=($!)
  celld_wait_port "$port" moto "$_celld_tmp/moto.log" || return 1
  export CELLD_TEST_STRICT_ENDPOINT=http://127.0.0.1:$port CELLD_TEST_STRICT_BUCKET=celld-strict
  creds=$("$CELLD_VENV/bin/python" "$root/scripts/lib/s3setup.py" strict "$CELLD_TEST_STRICT_ENDPOINT" "$CELLD_TEST_STRICT_BUCKET") || return 1
  export CELLD_TEST_STRICT_KEY_ID=${creds% *} CELLD_TEST_STRICT_SECRET=${creds#* }

  node "$root/scripts/lib/cors-proxy.mjs" "$port" >"$_celld_tmp/cors-proxy.port" 2>"$_celld_tmp/cors-proxy.log" &
  _celld_pids+=($!)
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $_celld_tmp/cors-proxy.port ]] && break; sleep 0.1; done
  [[ -s $_celld_tmp/cors-proxy.port ]] || { echo "servers: cors proxy did not start" >&2; return 1; }
  export CELLD_TEST_STRICT_BROWSER_ENDPOINT=http://127.0.0.1:$(<"$_celld_tmp/cors-proxy.port")

  echo "servers: ministack $CELLD_TEST_ATOMIC_ENDPOINT, moto (auth) $CELLD_TEST_STRICT_ENDPOINT, browser proxy $CELLD_TEST_STRICT_BROWSER_ENDPOINT"
}
