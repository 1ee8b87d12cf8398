#!/usr/bin/env bash
# Builds everything with warnings as errors and runs all tests. Tests labelled `gpu` run only where a GPU is
# visible (nvidia-smi lists one); elsewhere they are skipped and the script says so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup-deps.sh"
source "$here/common.sh"
mkdir -p "$KFUSE_BUILD"
kfuse_configure -DKFUSE_WERROR=ON
kfuse_build
cd "$KFUSE_BUILD"
ctest_args=(--output-on-failure -j "$KFUSE_JOBS" --timeout 600)
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "kfuse: a GPU is visible: running all tests, gpu-labelled ones included"
else
  echo "kfuse: no GPU visible: skipping tests labelled 'gpu'"
  ctest_args+=(-LE gpu)
fi
ctest "${ctest_args[@]}"
