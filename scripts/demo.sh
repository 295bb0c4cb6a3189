#!/usr/bin/env bash
# Builds strata and generates a story: scripts/demo.sh [MODEL.gguf] [PROMPT]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:-$root/../shared/models/stories260K.gguf}"
prompt="${2:-Once upon a time}"
if [ ! -f "$model" ]; then
  echo "no model at $model" >&2
  echo "pass a GGUF file: scripts/demo.sh path/to/model.gguf [\"prompt\"]" >&2
  exit 1
fi
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target strata
"$root/build/src/tools/strata" run -m "$model" -p "$prompt" -n 200 --temp 0.8 --seed 42
