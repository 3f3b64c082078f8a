#!/usr/bin/env bash
# Fails when a C source file under src/ does not open with its thread-owner comment: the first
# line says which threads run the file's code, in one greppable form,
#
#   /* Threads: worker threads; main thread at start (actors_recover_all). */
#
# (the comment may go on over more lines). The names in use: the main thread; the HTTP threads;
# the worker threads (each worker's loop: its own thread, or an HTTP thread's with --workers 0);
# the tool pool threads; the alarm thread; the auth thread; the admin thread and its shard-move
# thread; the store's watcher thread (store-probe); "any thread" for code that holds no thread's
# state. `grep -rh '^/\* Threads:' src` lists them all.
# Usage: tools/check-threads.sh [SRC_DIR] (default src).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-src}

bad=0
while IFS= read -r f; do
  if ! head -n 1 "$f" | grep -qE '^/\* Threads: [^ ]'; then
    echo "$f: the first line is not its thread-owner comment (/* Threads: ... */)"
    bad=1
  fi
done < <(find "$src" -name '*.c' | sort)

if [ $bad -ne 0 ]; then
  echo "check-threads: a source file does not say which threads run it (see tools/check-threads.sh)" >&2
  exit 1
fi
echo "check-threads: every source file says which threads run it"
