#!/usr/bin/env bash
# Fails when a source file includes a header of a folder its own folder may not depend on.
# The folders form a DAG (docs/ARCHITECTURE.md, "Layout"):
#
#   core <- wire <- store <- actor <- mcp, http, gateway      admin: core, store      main.c: anything
#   toolsets, plugins: the public API only (<mcpactord/tool.h>)
#
# A folder may include its own headers and those of the folders it depends on. The public API
# header is for the layers that implement or use it (actor: the handler context; mcp: the
# catalogue; toolsets and plugins). Usage: tools/check-layers.sh [SRC_DIR] (default src).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-src}

allowed() { # folder -> the folders it may include
  case $1 in
    core) echo "core" ;;
    wire) echo "core wire" ;;
    store) echo "core wire store" ;;
    actor) echo "core wire store actor" ;;
    mcp) echo "core wire store actor mcp" ;;
    http) echo "core wire actor http" ;;
    admin) echo "core store admin" ;;
    gateway) echo "core wire store actor gateway" ;;
    toolsets) echo "toolsets" ;;
    plugins) echo "" ;;
    *) echo "?" ;;
  esac
}
public_ok() { case $1 in actor | mcp | toolsets | plugins) return 0 ;; *) return 1 ;; esac; }

bad=0
while IFS= read -r f; do
  rel=${f#"$src"/}
  folder=${rel%%/*}
  [ "$folder" = "$rel" ] && continue # src/main.c: on top of everything
  ok=$(allowed "$folder")
  if [ "$ok" = "?" ]; then
    echo "$f: folder '$folder' is not in the layer table of tools/check-layers.sh"
    bad=1
    continue
  fi
  while IFS= read -r line; do
    inc=${line#*\"}
    inc=${inc%%\"*}
    dep=${inc%%/*}
    if [ "$dep" = "$inc" ]; then
      echo "$f: includes \"$inc\" without its folder (write \"folder/header.h\")"
      bad=1
    elif [[ " $ok " != *" $dep "* ]]; then
      echo "$f: $folder/ may not include $inc (allowed: ${ok:-none})"
      bad=1
    fi
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
  if grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<mcpactord/' "$f" && ! public_ok "$folder"; then
    echo "$f: $folder/ may not include the public tool API (only actor, mcp, toolsets, plugins)"
    bad=1
  fi
done < <(find "$src" -name '*.[ch]' | sort)

if [ $bad -ne 0 ]; then
  echo "check-layers: includes cross the allowed table (see the comment at the top of tools/check-layers.sh)" >&2
  exit 1
fi
echo "check-layers: every include follows the layer table"
