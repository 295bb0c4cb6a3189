#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS (default 60) under ASan + UBSan:
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]
# Builds the targets with clang in BUILD_DIR (default build-fuzz), generates seed corpora from
# ../shared in a temporary folder (nothing of ../shared is copied into the tree), replays the
# kept regression inputs in fuzz/regressions/<target>/, then fuzzes. Exits non-zero on the
# first finding; libFuzzer writes the input as crash-* in the current folder.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="${2:-$root/build-fuzz}"
shared="$root/../shared"
targets=(fuzz_gguf fuzz_tokenizer fuzz_flags fuzz_openai)

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSTRATA_FUZZ=ON \
  -DSTRATA_WERROR=OFF -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_NATIVE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for t in "${targets[@]}"; do mkdir -p "$work/seeds/$t" "$work/corpus/$t"; done

# GGUF: a whole small model, and the first 64 KiB (header and metadata) of the others.
if [ -f "$shared/models/stories260K-f16.gguf" ]; then
  cp "$shared/models/stories260K-f16.gguf" "$work/seeds/fuzz_gguf/"
fi
for f in "$shared"/models/*.gguf "$shared"/vocab/*.gguf; do
  [ -f "$f" ] && head -c 65536 "$f" >"$work/seeds/fuzz_gguf/head-$(basename "$f")"
done
# Tokenizer: the test strings of the vocabulary test vectors, one per file, behind the byte
# that picks the vocabulary and options (see fuzz_tokenizer.cpp).
for f in "$shared"/vocab/*.inp; do
  [ -f "$f" ] || continue
  awk -v dir="$work/seeds/fuzz_tokenizer" -v base="$(basename "$f")" '
    /^__ggml_vocab_test__$/ { n++; next }
    { file = dir "/" base "-" n; printf "%s%s\n", (seen[file]++ ? "" : "A"), $0 > file }
  ' "$f"
done
# Flags: command lines, arguments separated by NUL bytes.
i=0
for line in "-t 4 -c 512 -m model.gguf" "--temp=0.5 -h" "p -t -5 --ctx-size 99999999999" \
             "--temp inf -m" "-c 0x10 --threads=1e3"; do
  printf '%s' "$line" | tr ' ' '\0' >"$work/seeds/fuzz_flags/seed-$i"
  i=$((i + 1))
done

# Request bodies for the server's parser: the first byte picks chat (odd) or completions.
i=0
for body in '\x00{"prompt": "Once upon a time", "max_tokens": 8, "stop": ["\\n", "end"]}' \
            '\x01{"messages": [{"role": "user", "content": "Hi"}], "stream": true, "logprobs": true, "top_logprobs": 2}' \
            '\x00{"prompt": "x", "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.1, "seed": 3, "n_probs": 4}' \
            '\x01{"messages": [], "presence_penalty": 1.5, "frequency_penalty": -1}'; do
  printf "$body" >"$work/seeds/fuzz_openai/seed-$i"
  i=$((i + 1))
done

export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${targets[@]}"; do
  bin="$build/fuzz/$t"
  regressions="$root/fuzz/regressions/$t"
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    echo "== $t: replaying $(ls "$regressions" | wc -l) regression inputs"
    "$bin" "$regressions"/*
  fi
  echo "== $t: fuzzing for $seconds s"
  if ! "$bin" -max_total_time="$seconds" -max_len=1048576 -rss_limit_mb=4096 -timeout=30 \
    -print_final_stats=1 "$work/corpus/$t" "$work/seeds/$t" >"$work/$t.log" 2>&1; then
    tail -n 60 "$work/$t.log"
    exit 1
  fi
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)" "$work/$t.log" || true
done
