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
TMPDIR=$test_tmp ctest "${ctest_args[@]}" || status=$?
if [[ -n "$(ls -A "$test_tmp")" ]]; then
  echo "kfuse: the tests left files in the temporary directory:" >&2
  ls -A "$test_tmp" | head -20 >&2
  status=1
fi
rm -rf "$test_tmp"
exit "$status"
