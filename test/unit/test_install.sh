#!/bin/sh
# test_install.sh BUILD_DIR SOURCE_DIR EXAMPLE(0/1): an installed autotune away from its build.
# `meson install --destdir` into a temporary directory, the prefix copied elsewhere and the
# original removed, then, with nothing but the copy:
#   - examples/gemm_a8w8_blockscale.c builds with `pkg-config --cflags --libs autotune` (plus the
#     CUDA runtime and cuBLAS it uses itself) and starts (exit 0 on a GPU, 77 without one);
#   - the installed `autotune --version` names its version and the copy's templates;
#   - the installed `autotune --compile-only --arch sm_90a` compiles an installed search space;
#   - the installed `autotune warm` fills a cache with the same cubins (compile keys) as the build
#     tree's on the source tree's templates: a cache warmed by an installed copy is the one its
#     library (which reads the same installed templates) looks for.
set -u
build=$1 src=$2 example=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/autotune-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset AUTOTUNE_TEMPLATES # the test environment points it at the source tree
fail=0
check() { # check WHAT STATUS
  if [ "$2" != 0 ]; then echo "FAIL: $1" >&2; fail=1; else echo "ok: $1"; fi
}

meson install -C "$build" --no-rebuild --destdir "$tmp/destdir" >"$tmp/install.log" 2>&1
st=$?
check "meson install --destdir" $st
[ $st = 0 ] || { cat "$tmp/install.log" >&2; exit 1; }
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
cp -a "$tmp/destdir$prefix" "$tmp/moved" && rm -rf "$tmp/destdir"
p=$tmp/moved
pc=$(find "$p" -name autotune.pc | head -n 1)
[ -n "$pc" ]; check "autotune.pc installed" $?
libdir=$(dirname "$(dirname "$pc")")
[ -e "$libdir/libautotune.so" ] && [ -f "$p/include/autotune.h" ]; check "library and header installed" $?
[ -f "$p/share/autotune/templates/gemm_a8w8_blockscale_mma.cuh" ] &&
  [ -f "$p/share/autotune/search_spaces/a8w8_blockscale.yaml" ]; check "templates and spaces installed" $?

# The example, against the copy only.
if [ "$example" = 1 ] && command -v pkg-config >/dev/null 2>&1; then
  cuda=${CUDA_PATH:-/usr/local/cuda}
  # The copy's .pc first; the caller's path after it, where its dependencies' .pc files may be.
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --cflags --libs autotune)
  check "pkg-config --cflags --libs autotune" $?
  case "$flags" in *"$src"*|*"$build"*) check "pkg-config names the copy only ($flags)" 1 ;; esac
  cc -o "$tmp/example" "$src/examples/gemm_a8w8_blockscale.c" $flags -I"$cuda/include" \
    -L"$cuda/lib64" -L"$cuda/lib" -lcublasLt -lcublas -lcudart -lm 2>"$tmp/cc.log"
  st=$?
  check "the example builds against the copy" $st
  [ $st = 0 ] || cat "$tmp/cc.log" >&2
  if [ $st = 0 ]; then
    LD_LIBRARY_PATH="$libdir:$cuda/lib64:$cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/example" 64 1024 1024 >"$tmp/example.log" 2>&1
    st=$?
    [ $st = 0 ] || [ $st = 77 ]; check "the example runs (exit $st: 0 with a GPU, 77 without)" $?
    [ $st = 0 ] || [ $st = 77 ] || cat "$tmp/example.log" >&2
    ldd "$tmp/example" | grep -q "$libdir/libautotune.so" ||
      LD_LIBRARY_PATH="$libdir" ldd "$tmp/example" | grep -q "$libdir/libautotune.so"
    check "the example loads the copy's libautotune" $?
  fi
else
  echo "skipping the example: no CUDA runtime and cuBLAS, or no pkg-config"
fi

# The installed binary.
out=$("$p/bin/autotune" --version 2>&1)
check "autotune --version" $?
echo "$out"
echo "$out" | grep -q "^autotune [0-9]"; check "--version names the version" $?
echo "$out" | grep -q "^nvrtc  *[0-9]"; check "--version names NVRTC's version" $?
echo "$out" | grep -q "^templates $p/share/autotune/templates\$"; check "the copy's templates" $?

AUTOTUNE_CACHE=$tmp/cache AUTOTUNE_PROGRESS=plain "$p/bin/autotune" --compile-only --arch sm_90a --db "$tmp/db" \
  "$p/share/autotune/search_spaces/a8w8_blockscale_quick.yaml" >"$tmp/tune.log" 2>&1
st=$?
check "installed autotune --compile-only on an installed space" $st
grep -q "compile: 4 ok, 0 failed" "$tmp/tune.log"; check "every candidate compiled" $?
[ $st = 0 ] || cat "$tmp/tune.log" >&2

for who in installed build; do
  exe=$p/bin/autotune templates=
  [ $who = build ] && exe=$build/autotune templates=$src/templates
  AUTOTUNE_TEMPLATES=$templates AUTOTUNE_TAIL=off AUTOTUNE_PROGRESS=none "$exe" warm --device sm90 --sm-count 132 --m-max 1 \
    --configs "$src/configs" --cache "$tmp/warm-$who" 1024,1024 >"$tmp/warm-$who.log" 2>&1
  st=$?
  check "$who autotune warm" $st
  [ $st = 0 ] || cat "$tmp/warm-$who.log" >&2
  (cd "$tmp/warm-$who" 2>/dev/null && find . -name '*.cubin' | sort) >"$tmp/warm-$who.txt"
done
[ -s "$tmp/warm-installed.txt" ] && cmp -s "$tmp/warm-installed.txt" "$tmp/warm-build.txt"
check "installed and build-tree warm make the same cubins" $?

exit $fail
