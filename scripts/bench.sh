#!/usr/bin/env bash
# Runs every benchmark in bench/ with repetitions and prints the medians README's performance table quotes.
# Usage: scripts/bench.sh [benchmark-name-regex]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KFUSE_BUILD=${KFUSE_BUILD:-$(dirname "$here")/build-release}
source "$here/common.sh"
mkdir -p "$KFUSE_BUILD"
kfuse_configure -DCMAKE_BUILD_TYPE=Release
benches=(store_bench ptx_parse_bench import_bench analyze_bench merge_bench emulator_bench collector_bench rewrite_bench inject_bench
  standin_startup_bench)
# kfuse-gui's benchmark where the GUI is configured (scripts/setup-deps.sh --gui).
if [[ -d "$KFUSE_BUILD/gui" ]]; then benches+=(gui_bench); fi
# The PTX parse benchmark reads the nvcc-built corpus; the rewrite benchmark a recording of an example.
kfuse_build "${benches[@]}" kfuse_ptx_corpus kfuse example_elementwise_chain kfuse_standin_cuda
export KFUSE_PTX_CORPUS="$KFUSE_BUILD/tests/ptx_corpus"
chain_trace=$(mktemp -d)/elementwise_chain.sqlite
trap 'rm -rf "$(dirname "$chain_trace")"' EXIT
LD_LIBRARY_PATH="$KFUSE_BUILD/standin" "$KFUSE_BUILD/bin/kfuse" -q record -o "$chain_trace" -- \
  "$KFUSE_BUILD/examples/driver_api/elementwise_chain" >/dev/null
export KFUSE_BENCH_CHAIN_TRACE="$chain_trace"
filter=${1:-.}
for name in "${benches[@]}"; do
  [[ "$name" =~ $filter ]] || continue
  echo "== $name"
  "$KFUSE_BUILD/bench/$name" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null |
    grep -E "median|^Benchmark"
done
# The Kineto import figures are read next to plain decompression of the same file.
shared="$KFUSE_ROOT/../shared/data/kineto/hta_six_streams_rank0.json.gz"
if [[ -f "$shared" && "import" =~ $filter ]]; then
  echo "== zcat $(basename "$shared") > /dev/null (5 runs, seconds)"
  for _ in 1 2 3 4 5; do /usr/bin/time -f "%e" zcat "$shared" 2>&1 >/dev/null; done | sort -n | sed -n 3p
fi
