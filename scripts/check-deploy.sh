#!/usr/bin/env bash
# Checks deploy/: the Kubernetes manifests against the API schemas of Kubernetes 1.30
# (the first with appArmorProfile and hostUsers on by default) and the newest, strictly
# (an unknown field fails), with kubernetes-validate from PyPI (cached under target/);
# and the Localhost seccomp profile: valid JSON, allowing what the sandbox needs and
# refusing what it must. Part of scripts/test.sh. The image itself, with the sandbox
# inside a container runtime: scripts/container-check.sh.
source "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
VALIDATE_VERSION="1.37.0"
VENV="$REPO_ROOT/target/deploy-venv"
if ! "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('kubernetes-validate') == '$VALIDATE_VERSION'" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$VALIDATE_VERSION"
fi
for version in 1.30.0 1.37.0; do
  "$VENV/bin/kubernetes-validate" --strict --quiet -k "$version" deploy/kubernetes/*.yaml
done
python3 - deploy/kubernetes/codemode-seccomp.json <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
assert profile["defaultAction"] == "SCMP_ACT_ERRNO", "anything not listed is refused"
allowed = {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" for n in rule["names"]}
refused = {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ERRNO" for n in rule["names"]}
# What the sandbox does to build each worker (sandbox-worker/src/sandbox).
needed = {"unshare", "clone", "setns", "mount", "umount2", "pivot_root", "sethostname", "seccomp", "prctl",
          "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "setrlimit", "prlimit64",
          "capset", "setresuid", "setresgid", "socketpair",
          # What the host does: serve HTTP, start plugins.
          "socket", "bind", "listen", "accept4", "connect", "execve", "wait4"}
missing = needed - allowed
assert not missing, f"the profile refuses what the sandbox needs: {sorted(missing)}"
never = {"keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev", "userfaultfd",
         "kexec_load", "kexec_file_load", "init_module", "finit_module", "bpf", "perf_event_open", "io_uring_setup"}
granted = never & allowed
assert not granted, f"the profile allows what it must not: {sorted(granted)}"
assert refused & never, "the refusals are written down"
print(f"deploy: manifests valid (1.30, 1.37); seccomp profile allows {len(allowed)} calls, the sandbox's included")
PY
