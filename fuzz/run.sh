#!/bin/sh
# Builds and runs the libFuzzer targets; prints one TAP line per target.
#
#   sh fuzz/run.sh [--ci] SECONDS [TARGET...]     (from anywhere)
#
# TARGET: world_load, mesh_import (default both). Each target first replays
# its regression inputs (spec/regress/TARGET/*), then fuzzes for SECONDS
# from its corpus. --ci starts from the seeds alone in a temporary corpus
# with a fixed seed (a repeatable short run); otherwise the corpus in
# build/fuzz/corpus/TARGET grows from run to run. Crashes, leaks, timeouts
# and out-of-memory inputs are written to build/fuzz/crashes/TARGET/: copy
# each into spec/regress/TARGET/ once fixed. Needs the normal build
# (build/quarry.so) to make the world seeds.
set -u
cd "$(dirname "$0")/.."
ci=0
if [ "${1:-}" = "--ci" ]; then ci=1; shift; fi
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-world_load mesh_import}
FB=${FUZZ_BUILD:-build/fuzz}
# The fuzzers carry their own sanitizer runtimes (clang's); a preloaded gcc
# runtime from `make sanitize` must not be in the way.
unset LD_PRELOAD
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Mesh formats fuzzed (QUARRY_FUZZ_MESH_FORMATS): all by default; the CI run
# keeps to OBJ/OFF/STL/PLY so that a new finding in assimp's large glTF
# importer shows up in `make fuzz` rather than as a flaky CI failure.
if [ $ci = 1 ]; then
  export QUARRY_FUZZ_MESH_FORMATS="${QUARRY_FUZZ_MESH_FORMATS:-obj off stl ply}"
else
  export QUARRY_FUZZ_MESH_FORMATS="${QUARRY_FUZZ_MESH_FORMATS:-obj off stl ply gltf glb}"
fi
export LSAN_OPTIONS="suppressions=$(pwd)/fuzz/lsan.supp:print_suppressions=0"

if ! make --no-print-directory -s -f fuzz/Makefile -j2 FUZZ_BUILD="$FB" >"$FB.log" 2>&1; then
  mkdir -p "$FB"
  cat "$FB.log" >&2
  echo "not ok 1 - fuzz targets build (clang, libclang-rt-dev)"
  exit 1
fi

seed_corpus() { # $1 target, $2 dir
  case $1 in
  world_load)
    lua5.4 -e "package.cpath='${QUARRY_BUILD:-build}/?.so;'..package.cpath" fuzz/seeds.lua "$2" >/dev/null
    ;;
  mesh_import)
    i=0
    for ext in obj off stl ply gltf glb; do
      case " ${QUARRY_FUZZ_MESH_FORMATS:-obj off stl ply gltf glb} " in
      *" $ext "*) ;;
      *) i=$((i + 1)); continue ;;
      esac
      find /usr/share/assimp/models /usr/share/assimp-testmodels -type f -iname "*.$ext" \
           -size -64k 2>/dev/null | sort | while read -r f; do
        name=$(echo "$f" | cksum | cut -d' ' -f1)
        { printf "\\$(printf %o $i)"; cat "$f"; } >"$2/$ext-$name"
      done
      i=$((i + 1))
    done
    ;;
  esac
}

n=0
status=0
for t in $targets; do
  n=$((n + 1))
  bin="$FB/$t"
  crashes="$FB/crashes/$t"
  mkdir -p "$crashes"
  # 1. the regression inputs
  if [ -d "spec/regress/$t" ] && [ -n "$(ls "spec/regress/$t")" ]; then
    if ! "$bin" -runs=0 spec/regress/$t/* >"$FB/$t.regress.log" 2>&1; then
      tail -n 40 "$FB/$t.regress.log"
      echo "not ok $n - $t: a regression input fails again (see $FB/$t.regress.log)"
      status=1
      continue
    fi
  fi
  # 2. fuzzing
  if [ $ci = 1 ]; then
    corpus=$(mktemp -d)
    extra="-seed=1"
  else
    corpus="$FB/corpus/$t"
    mkdir -p "$corpus"
    extra=""
  fi
  seeds=$(mktemp -d)
  seed_corpus "$t" "$seeds"
  log="$FB/$t.log"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$crashes/" $extra "$corpus" "$seeds" >"$log" 2>&1
  rc=$?
  runs=$(grep 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  units=$(ls "$corpus" | wc -l)
  rm -rf "$seeds"
  [ $ci = 1 ] && rm -rf "$corpus"
  if [ $rc -eq 0 ]; then
    echo "ok $n - $t: ${runs:-?} executions in ${seconds} s, corpus ${units} inputs, no crash"
  else
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 10
    echo "not ok $n - $t: crashed after ${runs:-?} executions (log $log, input in $crashes/)"
    status=1
  fi
done
echo "1..$n"
exit $status
