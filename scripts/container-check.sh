#!/usr/bin/env bash
# The sandbox inside a container runtime (part of scripts/test.sh; about 3 minutes the
# first time):
#
#   bash scripts/container-check.sh
#
# Installs podman, runc and debootstrap from Debian; builds a Debian bookworm base image
# with debootstrap (this machine reaches Debian's mirrors, not image registries; cached
# as localhost/codemode-base:bookworm); builds the runtime stage of ./Dockerfile on it,
# with the release binaries of this checkout standing in for the dist binaries of its
# build stage; then runs the image as Kubernetes would run
# deploy/kubernetes/deployment.yaml: its non-root user, every capability dropped, no new
# privileges, a read-only root, and the Localhost seccomp profile
# deploy/kubernetes/codemode-seccomp.json. Checked:
#
# - `codemode sandbox-check` shows every sandbox layer active, and a program runs;
# - the image's search model is found and ranks by meaning;
# - `codemode serve` in the container answers /healthz (every layer), /readyz and an
#   execute request;
# - with a profile that refuses unshare (as a runtime's default does without
#   CAP_SYS_ADMIN), the layers it takes are reported missing and programs are refused:
#   never a weaker sandbox in silence.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
need=()
for p in podman runc debootstrap curl; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
cargo build --release --workspace --bins
WORK="$REPO_ROOT/target/container"
mkdir -p "$WORK"
# runc and cgroupfs: crun refuses this machine's hybrid cgroup layout. Explicit ulimits:
# the runtime's defaults exceed this machine's hard limits.
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs)
RUN_AS_KUBERNETES=(--rm --cap-drop=all --security-opt no-new-privileges --read-only --tmpfs /tmp
  --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
BASE=localhost/codemode-base:bookworm
if ! "${PODMAN[@]}" image exists "$BASE"; then
  rm -rf "$WORK/rootfs"
  debootstrap --variant=minbase --include=ca-certificates,python3 bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log"
  rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb
  tar -C "$WORK/rootfs" -c . | "${PODMAN[@]}" import - "$BASE" >/dev/null
  rm -rf "$WORK/rootfs"
fi
# The release binaries stand in for the dist ones the build stage makes (the same code;
# a dist build takes CI's whole budget on this machine).
rm -rf "$WORK/build" && mkdir -p "$WORK/build/src/target/dist"
cp target/release/codemode target/release/sandbox-worker "$WORK/build/src/target/dist/"
cp -r plugins "$WORK/build/src/plugins"
ensure_search_model
mkdir -p "$WORK/build/src/target/dist/models"
cp -r "$SEARCH_MODEL_DIR" "$WORK/build/src/target/dist/models/all-MiniLM-L6-v2"
"${PODMAN[@]}" build --quiet --build-context build="$WORK/build" --build-arg RUNTIME_BASE="$BASE" --target runtime \
  -t localhost/codemode:check . >/dev/null
IMAGE=localhost/codemode:check
PROFILE="$REPO_ROOT/deploy/kubernetes/codemode-seccomp.json"

fail() { echo "container check failed: $*" >&2; exit 1; }

report=$("${PODMAN[@]}" run "${RUN_AS_KUBERNETES[@]}" --security-opt seccomp="$PROFILE" "$IMAGE" sandbox-check)
echo "$report" | grep -q "^seccomp  *active" || fail "no sandbox report: $report"
if echo "$report" | grep -E "^[a-z_]+ +MISSING"; then fail "a layer is missing in the container"; fi
answer=$(echo 'return await tools.math.add({ a: 1, b: 2 })' |
  "${PODMAN[@]}" run -i "${RUN_AS_KUBERNETES[@]}" --security-opt seccomp="$PROFILE" "$IMAGE" run --example-tools -)
[ "$answer" = "3" ] || fail "a program in the container answered: $answer"
# The image's search model ranks by meaning (the root is read-only: no embedding cache).
ranker=$(echo 'const [hit] = await tools.$search("how hot will it be"); return `${hit.call} ${hit.ranker}`' |
  "${PODMAN[@]}" run -i "${RUN_AS_KUBERNETES[@]}" --security-opt seccomp="$PROFILE" "$IMAGE" run --example-tools -)
[ "$ranker" = "tools.weather.forecast all-MiniLM-L6-v2 + BM25" ] || fail "a search in the container: $ranker"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ops=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
name="codemode-check-$$"
"${PODMAN[@]}" run -d --name "$name" --network host "${RUN_AS_KUBERNETES[@]}" --security-opt seccomp="$PROFILE" "$IMAGE" \
  serve --example-tools --stateless --listen "127.0.0.1:$port" --ops-listen "127.0.0.1:$ops" >/dev/null
trap '"${PODMAN[@]}" rm -f "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$ops/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
health=$(curl -fsS "http://127.0.0.1:$ops/healthz") || fail "/healthz"
python3 -c 'import json,sys; h=json.loads(sys.argv[1]); assert h["status"]=="ok" and len(h["layers_active"])==16 and not h["layers_missing"], h' "$health" ||
  fail "/healthz in the container: $health"
result=$(curl -fsS -X POST "http://127.0.0.1:$port/mcp" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return await tools.math.add({ a: 2, b: 2 })"}}}')
echo "$result" | grep -q '"text":"4"' || fail "execute through the container's server: $result"
"${PODMAN[@]}" rm -f "$name" >/dev/null

# A runtime default that refuses unshare: the layers are missing, and said so.
python3 - "$PROFILE" "$WORK/no-unshare.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["syscalls"][0]["names"] = [n for n in p["syscalls"][0]["names"] if n != "unshare"]
p["syscalls"].append({"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1})
json.dump(p, open(sys.argv[2], "w"))
PY
set +e
weak=$("${PODMAN[@]}" run "${RUN_AS_KUBERNETES[@]}" --security-opt seccomp="$WORK/no-unshare.json" "$IMAGE" sandbox-check 2>&1)
refused=$(echo 'return 1' | "${PODMAN[@]}" run -i "${RUN_AS_KUBERNETES[@]}" --security-opt seccomp="$WORK/no-unshare.json" "$IMAGE" run - 2>&1)
status=$?
set -e
echo "$weak" | grep -Eq "^user_namespace +MISSING" || fail "without unshare, the user namespace is not reported missing: $weak"
[ "$status" -ne 0 ] || fail "without unshare, a program ran: $refused"
echo "container check: every layer active under deploy/kubernetes/codemode-seccomp.json, non-root, no capabilities, read-only root; /healthz, /readyz and execute served; without unshare the missing layers are reported and programs refused"
