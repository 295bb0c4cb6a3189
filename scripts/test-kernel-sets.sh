#!/usr/bin/env bash
# Runs the CPU conformance and kernel tests (test_cpu) and the golden engine tests under each
# kernel set (STRATA_KERNELS=<set>), so every set this machine can run is checked against the
# reference and llama.cpp's outputs, not only the best one the plain test run uses. A set the
# CPU lacks is reported and skipped. Needs a dispatch build (STRATA_NATIVE=OFF) with tests.
#
#   scripts/test-kernel-sets.sh [-B BUILD_DIR] [SET...]   (default: build, every set)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
if [ "${1:-}" = "-B" ]; then build="$2"; shift 2; fi
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(scalar avx2 avxvnni avx512 avx512vnni)
for exe in test_cpu test_engine; do
  [ -x "$build/tests/$exe" ] || { echo "test-kernel-sets: $build/tests/$exe: not built" >&2; exit 1; }
done
for set in "${sets[@]}"; do
  probe="$(STRATA_KERNELS=$set "$build/tests/test_cpu" --gtest_filter=KernelSets.EnvironmentPicksTheSet 2>&1)"
  if grep -q "this CPU lacks\|no such kernel set" <<<"$probe"; then
    echo "== kernel set $set: skipped ($(grep -o "STRATA_KERNELS=[^;]*: [^;]*" <<<"$probe" | head -1))"
    continue
  fi
  echo "== kernel set $set: cpu tests, golden engine tests"
  STRATA_KERNELS=$set "$build/tests/test_cpu" --gtest_brief=1
  STRATA_KERNELS=$set "$build/tests/test_engine" --gtest_brief=1 --gtest_filter='*Golden*'
done
