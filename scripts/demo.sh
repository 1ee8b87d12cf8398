#!/usr/bin/env bash
# Builds kfuse and runs its main job on the embedded default, on a CPU: the driver-API example programs
# (examples/driver_api) run unmodified on kfuse's emulator (the stand-in libcuda.so.1) under `kfuse record`, and
# `kfuse analyze` finds their fusion candidates — the elementwise chain and bias-add -> GELU proven, the stencil
# blocked with its reason — and `kfuse rewrite` writes the chain's fused kernel, compiles it with ptxas and validates
# it bit for bit on the emulator. Also analyzes the bundled synthetic demo trace (examples/traces/demo_chain.json:
# hand-made, times invented). Reports and the plan land in build/demo/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup-deps.sh"
source "$here/common.sh"
mkdir -p "$KFUSE_BUILD"
kfuse_configure
kfuse_build kfuse kfuse_standin_cuda example_elementwise_chain example_mlp_block example_stencil
kfuse="$KFUSE_BUILD/bin/kfuse"
out="$KFUSE_BUILD/demo"
mkdir -p "$out"

for example in elementwise_chain mlp_block stencil; do
  echo
  echo "kfuse: kfuse record -o $out/$example.sqlite -- examples/driver_api/$example   (on the CPU emulator)"
  LD_LIBRARY_PATH="$KFUSE_BUILD/standin" "$kfuse" record -f -o "$out/$example.sqlite" -- \
    "$KFUSE_BUILD/examples/driver_api/$example"
  echo
  echo "kfuse: kfuse analyze $out/$example.sqlite --html $out/$example.html"
  "$kfuse" analyze "$out/$example.sqlite" --html "$out/$example.html" --top 5
done

echo
echo "kfuse: kfuse rewrite $out/elementwise_chain.sqlite --candidate 1 -o $out/chain-plan --arch sm_80,sm_90,sm_100"
"$kfuse" rewrite "$out/elementwise_chain.sqlite" --candidate 1 -o "$out/chain-plan" --arch sm_80,sm_90,sm_100
echo
echo "kfuse: kfuse validate $out/chain-plan --seed 7"
"$kfuse" validate "$out/chain-plan" --seed 7
sed -n '1,/^## Fused kernel/p' "$out/chain-plan/README.md" | head -40

demo="$out/demo_chain.sqlite"
echo
echo "kfuse: importing examples/traces/demo_chain.json (synthetic: hand-made by make_demo_chain.py, times invented) -> $demo"
"$kfuse" import "$KFUSE_ROOT/examples/traces/demo_chain.json" -o "$demo" --force
"$kfuse" info "$demo"
echo
echo "kfuse: kfuse analyze $demo --html $out/demo_chain.html"
"$kfuse" analyze "$demo" --html "$out/demo_chain.html"
echo
echo "kfuse: reports in $out/*.html; the fused chain and its plan in $out/chain-plan/"
