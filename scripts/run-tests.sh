#!/bin/sh
# Runs the C unit tests and every busted spec against one build directory and
# prints a single closing line "N passed, N failed". Exits non-zero if anything
# failed or a runner crashed. Used by `make test` and `make sanitize`.
#   QUARRY_BUILD     build directory (default: build)
#   QUARRY_SANITIZE  1 when the build uses ASan/UBSan: preloads the runtimes
#                    into lua5.4 so that build/.../quarry.so can be loaded
set -u
BUILD=${QUARRY_BUILD:-build}
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

if [ "${QUARRY_SANITIZE:-0}" = 1 ]; then
  asan=$(cc -print-file-name=libasan.so)
  ubsan=$(cc -print-file-name=libubsan.so)
  export LD_PRELOAD="$asan $ubsan"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$(pwd)/spec/support/lsan.supp:print_suppressions=0"
fi

count() { # $1: TAP output file; $2: runner exit code; $3: label
  p=$(grep -c '^ok ' "$1")
  f=$(grep -c '^not ok ' "$1")
  if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "run-tests: $3 exited with status $2 without reporting a failure (crash?)"
    f=1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
}

for t in "$BUILD"/ctest/*; do
  [ -x "$t" ] || continue
  "$t" >"$log" 2>&1
  rc=$?
  grep '^not ok' "$log"
  count "$log" $rc "$(basename "$t")"
done

busted --cpath="$BUILD/?.so" -o TAP spec >"$log" 2>&1
rc=$?
grep -v '^ok ' "$log" | grep -v '^1\.\.' | grep -v '^$'
count "$log" $rc busted

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
