#!/bin/sh
# build.sh: builds autotune into build/. Run as root on Debian, it first installs the packages the
# build needs that are missing (the CUDA toolkit itself must already be installed: nvcc, NVRTC,
# cuBLAS and their headers, under /usr/local/cuda or $CUDA_PATH).
set -eu
cd "$(dirname "$0")"

need=""
command -v meson >/dev/null 2>&1 || need="$need meson"
command -v ninja >/dev/null 2>&1 || need="$need ninja-build"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v cc >/dev/null 2>&1 || need="$need gcc"
pkg-config --exists yaml-0.1 2>/dev/null || need="$need libyaml-dev"
pkg-config --exists sqlite3 2>/dev/null || need="$need libsqlite3-dev"
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "build.sh: installing$need" >&2
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
  else
    echo "build.sh: missing$need; install them (as root: apt-get install$need) and run again" >&2
    exit 1
  fi
fi
if [ -z "${CUDA_PATH:-}" ] && [ -d /usr/local/cuda ]; then export CUDA_PATH=/usr/local/cuda; fi

[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null
echo "build.sh: built build/autotune" >&2
