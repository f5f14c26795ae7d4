#!/usr/bin/env bash
# A load test of codemode as a service: N stateless `codemode serve` replicas on loopback
# ports behind HAProxy (installed from Debian), driven by a bounded number of concurrent
# clients for a bounded time (scripts/loadtest/driver.py). Prints throughput, p50/p99
# and errors for each replica count. Opt-in (not part of scripts/test.sh):
#
#   bash scripts/loadtest.sh [REPLICAS...]       # default: 1 2
#   CLIENTS=16 DURATION=20 bash scripts/loadtest.sh 1 2
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
if ! command -v haproxy >/dev/null 2>&1; then
  echo "installing haproxy" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq haproxy >/dev/null
fi
cargo build --release --workspace --bins
CLIENTS="${CLIENTS:-16}"
SECONDS_EACH="${DURATION:-15}"
REPLICA_COUNTS=("$@")
[ "${#REPLICA_COUNTS[@]}" -gt 0 ] || REPLICA_COUNTS=(1 2)
WORK="$(mktemp -d /tmp/codemode-loadtest-XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
  for _ in $(seq 300); do
    curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "a replica did not become ready (its log is in $WORK)" >&2; exit 1
}

echo "codemode load test: $(nproc) cores, $CLIENTS clients, ${SECONDS_EACH}s per run, HAProxy in front"
for n in "${REPLICA_COUNTS[@]}"; do
  cleanup; PIDS=()
  servers=""
  for i in $(seq "$n"); do
    port=$(free_port); ops=$(free_port)
    env -u CODEMODE_TOKEN target/release/codemode serve --example-tools --stateless --listen "127.0.0.1:$port" \
      --ops-listen "127.0.0.1:$ops" 2>"$WORK/replica-$n-$i.log" &
    PIDS+=($!)
    wait_ready "$ops"
    servers+="    server r$i 127.0.0.1:$port check port $ops inter 2s
"
    # HAProxy's health check asks /readyz on the operations port.
  done
  front=$(free_port)
  cat >"$WORK/haproxy-$n.cfg" <<CFG
global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option http-keep-alive
frontend mcp
    bind 127.0.0.1:$front
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
$servers
CFG
  haproxy -f "$WORK/haproxy-$n.cfg" -db >"$WORK/haproxy-$n.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do
    curl -fsS -o /dev/null -X POST "http://127.0.0.1:$front/mcp" -H 'content-type: application/json' \
      -H 'accept: application/json, text/event-stream' \
      -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}' 2>/dev/null && break
    sleep 0.1
  done
  printf '%s replica(s): ' "$n"
  python3 scripts/loadtest/driver.py "http://127.0.0.1:$front/mcp" "$CLIENTS" "$SECONDS_EACH"
done
