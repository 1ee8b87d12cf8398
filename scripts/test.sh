#!/usr/bin/env bash
# Builds everything with warnings as errors and runs all tests. Tests labelled `gpu` run only where a GPU is
# visible (nvidia-smi lists one); elsewhere they are skipped and the script says so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# With the GUI's packages: kfuse-gui is built and its tests (offscreen Qt, no display needed) run too.
"$here/setup-deps.sh" --gui
source "$here/common.sh"
# Formatting first: seconds, and a failure says which files to run scripts/format.sh on.
format_status=0
"$here/format.sh" --check || format_status=1
mkdir -p "$KFUSE_BUILD"
kfuse_configure "${KFUSE_SCRIPT_CMAKE_ARGS[@]}" -DKFUSE_BUILD_GUI=ON
start=$(date +%s)
kfuse_build
echo "kfuse: built in $(($(date +%s) - start)) s; running the tests (about a minute on 2 cores)"
cd "$KFUSE_BUILD"
ctest_args=(--output-on-failure -j "$KFUSE_JOBS" --timeout 600)
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "kfuse: a GPU is visible: running all tests, gpu-labelled ones included"
else
  echo "kfuse: no GPU visible: skipping tests labelled 'gpu'"
  ctest_args+=(-LE gpu)
fi
# Tests must leave nothing behind in the temporary directory: they run with a private one, checked afterwards.
status=$format_status
kfuse_ctest_private_tmp kfuse "${ctest_args[@]}" || status=1

# Then the sanitizer and fuzzing stages, each in a time box (README "Reliability" says what each covers; a stage
# over its box fails the run); KFUSE_QUICK=1 skips them:
#   - ThreadSanitizer (GCC, build-ci-tsan/) over the collector's and injector's concurrency tests;
#   - ASan + UBSan (clang, build-fuzz/) over the unit and end-to-end file tests, then every fuzz target in the same
#     instrumented build for a fixed number of inputs from seed 1 (repeatable: the same inputs every run).
stage() {
  local name=$1 box=$2
  shift 2
  local s rc=0
  s=$(date +%s)
  echo "kfuse: stage $name (time box ${box} s)"
  timeout --kill-after=30 "$box" "$@" || rc=$?
  echo "kfuse: stage $name took $(($(date +%s) - s)) s, exit $rc"
  ((rc == 124)) && echo "kfuse: stage $name ran past its time box" >&2
  return "$rc"
}
if [[ "${KFUSE_QUICK:-0}" != 1 ]]; then
  stage tsan "${KFUSE_TSAN_BOX:-1200}" "$here/sanitize.sh" tsan || status=1
  stage asan-ubsan "${KFUSE_ASAN_BOX:-1800}" "$here/sanitize.sh" asan || status=1
  stage fuzz "${KFUSE_FUZZ_BOX:-900}" "$here/fuzz.sh" all --runs "${KFUSE_FUZZ_RUNS:-2000}" || status=1
else
  echo "kfuse: KFUSE_QUICK=1: sanitizer and fuzzing stages skipped"
fi
exit "$status"
