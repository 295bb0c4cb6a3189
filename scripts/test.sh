#!/usr/bin/env bash
# Builds strata with its tests (warnings are errors) and runs them with ctest. The build
# options are set here, not inherited: a build/ that scripts/demo.sh configured without tests
# (or a sanitizer build) is reconfigured to build every test, and ctest fails if it finds none.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=ON -DSTRATA_BUILD_TESTS=ON \
  -DSTRATA_SANITIZE=OFF -DSTRATA_TSAN=OFF >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure --no-tests=error -j"$(nproc)"
