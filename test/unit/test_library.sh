#!/bin/sh
# test_library.sh LIB HEADER: the boundary of libautotune. The library exports exactly the
# functions autotune.h declares (AT_API), carries a versioned SONAME, and links neither libyaml nor
# any tuner code (the tuner's symbols are hidden, so a leaked one would show up as an export).
set -u
lib=$1 header=$2
fail=0
check() { # check WHAT CONDITION-STATUS
  if [ "$2" != 0 ]; then echo "FAIL: $1" >&2; fail=1; else echo "ok: $1"; fi
}

for tool in nm ldd readelf; do
  command -v $tool >/dev/null 2>&1 || { echo "skipped: $tool not found" >&2; exit 77; }
done

# The header's functions: every declaration that starts with AT_API.
want=$(sed -n 's/^AT_API [^(]*[ *]\(at_[a-z0-9_]*\)(.*/\1/p' "$header" | sort)
# The library's defined dynamic symbols, less the linker's own (_init, _fini, __bss_start, ...).
have=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^_' | sort)
[ -n "$want" ]; check "autotune.h declares functions with AT_API" $?
[ "$want" = "$have" ]; st=$?
check "exports equal autotune.h's functions" $st
if [ $st != 0 ]; then
  echo "  autotune.h: $(echo $want)" >&2
  echo "  exported:   $(echo $have)" >&2
fi

! ldd "$lib" | grep -q yaml; check "libyaml is not linked" $?
! nm "$lib" 2>/dev/null | grep -q -E ' (at_tune|at_space_|at_yaml|at_worker|at_enum|at_compile|at_expr|at_gpu_op|at_bench)'; check "no tuner code inside" $?

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "$soname" | grep -q -E '^libautotune\.so\.[0-9]+$'; check "versioned SONAME ($soname)" $?

exit $fail
