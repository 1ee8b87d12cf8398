#!/usr/bin/env bash
# Runs every benchmark in bench/ with repetitions and prints the medians README's performance table quotes.
# Usage: scripts/bench.sh [benchmark-name-regex]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KFUSE_BUILD=${KFUSE_BUILD:-$(dirname "$here")/build-release}
source "$here/common.sh"
mkdir -p "$KFUSE_BUILD"
kfuse_configure -DCMAKE_BUILD_TYPE=Release
kfuse_build
filter=${1:-.}
for b in "$KFUSE_BUILD"/bench/*; do
  [[ -x "$b" && -f "$b" ]] || continue
  [[ "$(basename "$b")" =~ $filter ]] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null | grep -E "median|^Benchmark"
done
