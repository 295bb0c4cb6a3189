#!/usr/bin/env bash
# Installs what strata needs to build and test on Debian 12.
set -euo pipefail
pkgs=(cmake g++ make libgtest-dev libgmock-dev googletest nlohmann-json3-dev libcpp-httplib-dev libbenchmark-dev libnuma-dev libpcre2-dev pkg-config python3-jinja2 openmpi-bin libopenmpi-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
