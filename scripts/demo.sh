#!/usr/bin/env bash
# Builds kfuse and runs `kfuse demo`, the whole story on a CPU (or on this machine's GPU when it has one): an
# unmodified example program (examples/driver_api/elementwise_chain) is recorded on kfuse's emulator through the
# stand-in libcuda.so.1, analyzed (the chain scale -> add -> relu -> mul proven fusable from its PTX), rewritten
# into one fused kernel that ptxas compiles and the emulator validates bit for bit, and run again with the fused
# kernel injected (`kfuse run`); a before/after table follows, then the top recommendations for a real PyTorch
# trace from ../shared/data. Everything lands in build/demo/.
# The build is configured exactly as scripts/test.sh configures it, so running the tests afterwards reuses it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup-deps.sh"
source "$here/common.sh"
mkdir -p "$KFUSE_BUILD"
kfuse_configure "${KFUSE_SCRIPT_CMAKE_ARGS[@]}"
start=$(date +%s)
kfuse_build kfuse kfuse_standin_cuda example_elementwise_chain
echo "kfuse: built in $(($(date +%s) - start)) s"
rm -rf "$KFUSE_BUILD/demo"
"$KFUSE_BUILD/bin/kfuse" demo -o "$KFUSE_BUILD/demo"
