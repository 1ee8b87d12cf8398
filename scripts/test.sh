#!/usr/bin/env bash
# Builds everything with warnings as errors and runs all tests. Tests labelled `gpu` run only where a GPU is
# visible (nvidia-smi lists one); elsewhere they are skipped and the script says so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# With the GUI's packages: kfuse-gui is built and its tests (offscreen Qt, no display needed) run too.
"$here/setup-deps.sh" --gui
source "$here/common.sh"
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
test_tmp=$(mktemp -d)
status=0
start=$(date +%s)
TMPDIR=$test_tmp ctest "${ctest_args[@]}" || status=$?
echo "kfuse: tests took $(($(date +%s) - start)) s"
if [[ -n "$(ls -A "$test_tmp")" ]]; then
  echo "kfuse: the tests left files in the temporary directory:" >&2
  ls -A "$test_tmp" | head -20 >&2
  status=1
fi
rm -rf "$test_tmp"

# Then, each in its own build directory and time box (README "Reliability" says what each covers; a stage over its
# box fails the run): unless KFUSE_QUICK=1, ThreadSanitizer over the collector's and injector's concurrency tests;
# with KFUSE_SANITIZERS=1 also ASan+UBSan and a short fuzzing run of every reader. Those two are not part of CI yet:
# the ASan stage has not yet run to the end on this 2-core machine, and fuzzing for a fixed time is not repeatable
# (a run may find what the last did not).
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
fi
if [[ "${KFUSE_SANITIZERS:-0}" == 1 ]]; then
  stage asan-ubsan "${KFUSE_ASAN_BOX:-1200}" "$here/sanitize.sh" asan || status=1
  stage fuzz "${KFUSE_FUZZ_BOX:-600}" "$here/fuzz.sh" all "${KFUSE_FUZZ_SECONDS:-15}" || status=1
else
  echo "kfuse: ASan+UBSan and fuzzing stages skipped (KFUSE_SANITIZERS=1 ./scripts/test.sh runs them)"
fi
exit "$status"
