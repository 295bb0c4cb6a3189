#!/usr/bin/env bash
# Installs strata into a prefix in the build tree, builds examples/c/generate.c against the
# installed package twice (find_package and pkg-config), and checks that both print what
# `strata run` prints for the same greedy request.
# usage: install_example.sh BUILD_DIR SOURCE_DIR STRATA_BIN MODEL
set -euo pipefail
build="$1" src="$2" strata="$3" model="$4"
work="$build/capi-install-test"
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null

cmake -S "$src/examples/c" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake" >/dev/null

pc_dir="$(dirname "$(find "$prefix" -name strata.pc | head -n1)")"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
cc -std=c99 -Wall -Wextra -Werror -o "$work/generate-pc" "$src/examples/c/generate.c" \
  $(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs strata)

prompt="Once upon a time"
expected="$("$strata" run -m "$model" -p "$prompt" -n 32 --temp 0 2>/dev/null)"
via_cmake="$("$work/cmake/generate" "$model" "$prompt" 32)"
# The pkg-config build has no run path to the prefix; the loader is told where it is.
lib_dir="$(dirname "$(find "$prefix" -name 'libstrata.so' | head -n1)")"
via_pc="$(LD_LIBRARY_PATH="$lib_dir" "$work/generate-pc" "$model" "$prompt" 32)"
status=0
if [ "$via_cmake" != "$expected" ]; then
  printf 'find_package build differs:\n  got:  %s\n  want: %s\n' "$via_cmake" "$expected"
  status=1
fi
if [ "$via_pc" != "$expected" ]; then
  printf 'pkg-config build differs:\n  got:  %s\n  want: %s\n' "$via_pc" "$expected"
  status=1
fi
[ "$status" -eq 0 ] && printf 'ok: %s\n' "$expected"
exit "$status"
