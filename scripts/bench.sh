#!/usr/bin/env bash
# Prints the start-up and tool-call figures (p50/p95) of a release build.
#
#   scripts/bench.sh [--dist] [-- BENCH_ARGS...]
#
#   --dist        measure the shipped binaries instead: the `dist` profile (fat LTO, one
#                 codegen unit; what the container image holds), built into target/dist
#   BENCH_ARGS    passed to the bench: `startup`, `cpu` or `profile` (see
#                 host/benches/execute.rs); all figures when none
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"

PROFILE=release
while [ $# -gt 0 ]; do
  case "$1" in
    --dist) PROFILE=dist; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
done

cargo build --release --workspace --bins
if [ "$PROFILE" = dist ]; then
  cargo build --profile dist -p sandbox-worker --bins
  # The harness stays a release build; the workers it forks are the shipped binary,
  # and they are where a program's CPU goes.
  export CODEMODE_WORKER="$REPO_ROOT/target/dist/sandbox-worker"
  echo "bench: workers from $CODEMODE_WORKER (dist profile)" >&2
fi
cargo bench -p codemode --bench execute -- "$@"
