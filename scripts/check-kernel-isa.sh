#!/usr/bin/env bash
# Checks that a dispatch build (STRATA_NATIVE=OFF) keeps each instruction set where it belongs,
# so the binary starts on any x86-64 and runs a lower kernel set without an illegal
# instruction, which a test on an AVX-512 machine cannot catch:
#   - baseline objects (everything but the kernel sets' objects) hold no AVX
#     instruction at all (no VEX/EVEX mnemonic); tools/probe.cpp is exempt, its AVX functions
#     carry target attributes and run only after a CPU check;
#   - the avx2 and avxvnni kernel objects hold no AVX-512 (zmm, mask or upper-16 registers);
#   - each linked kernel-set object exports its table and nothing else.
#
#   scripts/check-kernel-isa.sh [BUILD_DIR]    (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
[ -d "$build/src" ] || { echo "check-kernel-isa: $build: no build there" >&2; exit 1; }
fail=0

# Prints "object: count first-offending-line" when the disassembly matches the pattern.
offending() {
  local pattern="$1"; shift
  for o in "$@"; do
    local hits
    hits="$(objdump -d --no-show-raw-insn "$o" | grep -E "$pattern" || true)"
    if [ -n "$hits" ]; then
      echo "  ${o#"$build"/}: $(printf '%s\n' "$hits" | wc -l) instructions, e.g.$(printf '%s\n' "$hits" | head -1)"
    fi
  done
}

mapfile -t baseline < <(find "$build/src" -name '*.o' -path '*CMakeFiles*' \
  ! -path '*strata_kernels_avx*' ! -name 'probe.cpp.o' | sort)
mapfile -t avx2 < <(find "$build/src" -name '*.o' \( -path '*strata_kernels_avx2.dir*' -o \
  -path '*strata_kernels_avxvnni.dir*' \) | sort)
[ ${#baseline[@]} -gt 0 ] || { echo "check-kernel-isa: no objects under $build/src" >&2; exit 1; }
[ ${#avx2[@]} -gt 0 ] || { echo "check-kernel-isa: no avx2 kernel objects (a STRATA_NATIVE build?)" >&2; exit 1; }

# A VEX or EVEX mnemonic starts with v (vmovups, vfmadd231ps, ...); none of the legacy
# instructions a baseline compiler emits does, except verr/verw, which it never emits.
bad="$(offending $'\tv[a-z]' "${baseline[@]}")"
if [ -n "$bad" ]; then
  echo "check-kernel-isa: AVX instructions in baseline objects:"; echo "$bad"; fail=1
fi
bad="$(offending '%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])' "${avx2[@]}")"
if [ -n "$bad" ]; then
  echo "check-kernel-isa: AVX-512 in the avx2 or avxvnni kernel set:"; echo "$bad"; fail=1
fi
for o in "$build"/src/cpu/kernels_*.o; do
  exported="$(nm --defined-only -g "$o" | awk '{print $3}')"
  if [ "$exported" != "$(nm --defined-only -g "$o" | awk '/kKernelSetE$/ {print $3}')" ] ||
    [ -z "$exported" ]; then
    echo "check-kernel-isa: ${o#"$build"/} exports more than its table:"; echo "$exported" | head; fail=1
  fi
done
[ $fail -eq 0 ] && echo "check-kernel-isa: ${#baseline[@]} baseline objects without AVX, ${#avx2[@]} avx2 and avxvnni kernel objects without AVX-512, kernel-set objects export only their tables"
exit $fail
