#!/usr/bin/env bash
# The seed-format plugin fixtures (tests/plugins/formats), each with the npm packages
# its authors would have installed, in target/formats/: the tests load them from there.
# Installs from the npm registry the first time and again only when a fixture's
# package.json changes; nothing is fetched when programs or plugins run.
#
#   effect3, effect4  seed 000's Effect + zod variant, over effect 3.x and 4.x
#   zhin              seed 001 (tools/<name>/index.ts, zod 4)
#   plico             seed 002 (tools/*.tool.ts, zod 3, ArkType, CommonJS packages)
#   globals           seed 003 (one globalThis.tools script; no packages)
#   podcode           seed 004 (one module, zod 3)
#   podcode-above     seed 004's example in plugins/, its zod installed one folder above
#   schema-libs       the schema libraries tests/js/plugin_schema.test.mjs converts
source "$(dirname "$0")/lib.sh"
ensure_node
cd "$REPO_ROOT"
OUT="$REPO_ROOT/target/formats"
mkdir -p "$OUT"

# fixture <name> <source folder> [package.json text]
fixture() {
  local name="$1" source="$2" manifest="${3:-}"
  local dest="$OUT/$name"
  mkdir -p "$dest"
  # The fixture's own files, fresh each time; node_modules stays.
  find "$dest" -mindepth 1 -maxdepth 1 ! -name node_modules ! -name .installed -exec rm -rf {} +
  cp -R "$source"/. "$dest"/
  if [ -n "$manifest" ]; then printf '%s\n' "$manifest" >"$dest/package.json"; fi
  [ -f "$dest/package.json" ] || return 0
  local want
  want="$(sha256sum "$dest/package.json" | cut -d' ' -f1)"
  if [ ! -d "$dest/node_modules" ] || [ "$(cat "$dest/.installed" 2>/dev/null)" != "$want" ]; then
    echo "installing the npm packages of fixture $name" >&2
    (cd "$dest" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" >"$dest/.installed"
  fi
}

FORMATS=tests/plugins/formats
fixture effect3 "$FORMATS/effect" '{ "name": "words-effect3", "private": true, "type": "module", "dependencies": { "effect": "3.22.4", "zod": "4.6.7" } }'
fixture effect4 "$FORMATS/effect" '{ "name": "words-effect4", "private": true, "type": "module", "dependencies": { "effect": "4.1.0", "zod": "4.6.7" } }'
fixture zhin "$FORMATS/zhin"
fixture plico "$FORMATS/plico"
fixture globals "$FORMATS/globals"
fixture podcode "$FORMATS/podcode"
fixture podcode-above "$FORMATS/podcode-above"
fixture schema-libs "$FORMATS/schema-libs" '{ "name": "schema-libs", "private": true, "dependencies": { "zod": "4.6.7", "zod3": "npm:zod@3.25.76", "valibot": "1.5.0", "@valibot/to-json-schema": "1.8.0", "arktype": "2.2.10" } }'
