#!/usr/bin/env bash
# Runs llama.cpp's llama-bench and `strata bench` on the same model files with the same
# settings, one after the other per file, and prints prefill and decode speeds side by side
# with strata's ratio to llama.cpp. Figures from different runs or machines are not
# comparisons; this puts both in one run.
#
#   scripts/compare-llama.sh [-p 512] [-n 128] [-t 2] [-r 3] [--llama-bench PATH]
#                            [--strata PATH] MODEL.gguf...
#
# Defaults: ../shared/bench/llama.cpp-2025-06/llama-bench and build/src/tools/strata (both
# relative to the repository root). STRATA_KERNELS and other environment variables reach strata.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
llama="$root/../shared/bench/llama.cpp-2025-06/llama-bench"
strata="$root/build/src/tools/strata"
p=512 n=128 t=2 r=3
models=()
usage() {
  sed -n '7,8p' "$0" | sed 's/^# *//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    -p) p="$2"; shift 2 ;;
    -n) n="$2"; shift 2 ;;
    -t) t="$2"; shift 2 ;;
    -r) r="$2"; shift 2 ;;
    --llama-bench) llama="$2"; shift 2 ;;
    --strata) strata="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "compare-llama: unknown option $1" >&2; usage ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || usage
for exe in "$llama" "$strata"; do
  [ -x "$exe" ] || { echo "compare-llama: $exe: not an executable (see --llama-bench, --strata)" >&2; exit 1; }
done

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
i=0
for m in "${models[@]}"; do
  [ -r "$m" ] || { echo "compare-llama: $m: cannot read" >&2; exit 1; }
  echo "compare-llama: $(basename "$m"): llama-bench, then strata bench (-p $p -n $n -t $t -r $r)" >&2
  "$llama" -m "$m" -p "$p" -n "$n" -t "$t" -r "$r" -o json >"$out/llama-$i.json" 2>"$out/llama-$i.log" ||
    { cat "$out/llama-$i.log" >&2; echo "compare-llama: llama-bench failed on $m" >&2; exit 1; }
  "$strata" bench -m "$m" -p "$p" -n "$n" -t "$t" -r "$r" --json >"$out/strata-$i.json" 2>"$out/strata-$i.log" ||
    { cat "$out/strata-$i.log" >&2; echo "compare-llama: strata bench failed on $m" >&2; exit 1; }
  grep -h "kernel set" "$out/strata-$i.log" >&2 || true
  i=$((i + 1))
done

python3 - "$out" "$i" "$p" "$n" <<'PY'
import json, os, sys

out, count, p, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def speeds(tests, prompt_key, gen_key):
    """(pp t/s, tg t/s) from a list of test records."""
    pp = tg = None
    for t in tests:
        if t[prompt_key] > 0 and t[gen_key] == 0:
            pp = t["avg_ts"]
        elif t[gen_key] > 0 and t[prompt_key] == 0:
            tg = t["avg_ts"]
    return pp, tg

def cell(ours, theirs):
    if ours is None:
        return "-"
    if not theirs:
        return "%.1f" % ours
    return "%.1f (%.2fx)" % (ours, ours / theirs)

rows = []
kernels = set()
for i in range(count):
    with open(os.path.join(out, "llama-%d.json" % i)) as f:
        llama = json.load(f)
    with open(os.path.join(out, "strata-%d.json" % i)) as f:
        strata = json.load(f)
    lpp, ltg = speeds(llama, "n_prompt", "n_gen")
    spp, stg = speeds(strata["tests"], "n_prompt", "n_gen")
    if "kernel_set" in strata:
        kernels.add(strata["kernel_set"])
    name = "%s %s" % (os.path.basename(strata["model_file"]), strata["model_type"])
    rows.append((name, lpp, spp, ltg, stg))

head = ("type", "llama.cpp pp%s" % p, "strata pp%s" % p, "llama.cpp tg%s" % n, "strata tg%s" % n)
print("| " + " | ".join(head) + " |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, lpp, spp, ltg, stg in rows:
    print("| %s | %s | %s | %s | %s |" % (name, cell(lpp, None), cell(spp, lpp), cell(ltg, None),
                                          cell(stg, ltg)))
cpu = llama[0].get("cpu_info", "?") if llama else "?"
print("\nthreads %s, CPU %s%s" % (llama[0]["n_threads"] if llama else "?", cpu,
      ", strata kernel set " + ", ".join(sorted(kernels)) if kernels else ""))
PY
