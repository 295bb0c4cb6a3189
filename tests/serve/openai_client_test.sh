#!/usr/bin/env bash
# strata serve driven by the `openai` npm package (a client no one here wrote). Skips (exit 77)
# where Node.js or npm is missing, or the npm registry cannot be reached.
set -euo pipefail
strata="$1"
model="$2"
src="$(cd "$(dirname "$0")/openai_client" && pwd)"
work="$3/openai_client"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node or npm not installed"; exit 77
fi
if [ ! -f "$model" ]; then echo "SKIP: $model not found"; exit 77; fi
mkdir -p "$work"
cp "$src/package.json" "$src/client.mjs" "$work/"
if [ ! -d "$work/node_modules/openai" ]; then
  if ! (cd "$work" && npm install --no-audit --no-fund --silent >/dev/null 2>&1); then
    echo "SKIP: npm install openai failed (no registry?)"; exit 77
  fi
fi
expected="$("$strata" run -m "$model" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)"
expected="${expected#Once upon a time}"
log="$work/serve.log"
"$strata" serve -m "$model" --port 0 --api-key test-key -c 1024 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 100); do
  port="$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log")"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "server did not start:"; cat "$log"; exit 1; }
(cd "$work" && node client.mjs "$port" "$expected")
kill -INT $pid
wait $pid
trap - EXIT
grep -q "stopped" "$log"
