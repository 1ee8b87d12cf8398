#!/usr/bin/env bash
# Builds kfuse and runs its main job on the embedded default: until the end-to-end emulator demo exists, that is
# importing the bundled demo trace (examples/traces/demo_chain.json), summarizing it with `kfuse info` and
# analyzing it for fusion candidates with `kfuse analyze` (report also written to build/demo/report.html).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup-deps.sh"
source "$here/common.sh"
mkdir -p "$KFUSE_BUILD"
kfuse_configure
kfuse_build kfuse
demo="$KFUSE_BUILD/demo/demo_chain.sqlite"
mkdir -p "$(dirname "$demo")"
echo "kfuse: importing examples/traces/demo_chain.json -> $demo"
"$KFUSE_BUILD/bin/kfuse" import "$KFUSE_ROOT/examples/traces/demo_chain.json" -o "$demo" --force
echo "kfuse: kfuse info $demo"
echo
"$KFUSE_BUILD/bin/kfuse" info "$demo"
echo
echo "kfuse: kfuse analyze $demo --html $KFUSE_BUILD/demo/report.html"
echo
"$KFUSE_BUILD/bin/kfuse" analyze "$demo" --html "$KFUSE_BUILD/demo/report.html"
