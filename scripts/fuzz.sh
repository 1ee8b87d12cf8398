#!/usr/bin/env bash
# Builds the libFuzzer targets (in the instrumented build scripts/sanitize.sh asan shares: clang, ASan + UBSan;
# build-fuzz/) and fuzzes one for a fixed time, seeded from
# the tests' inputs. A crash leaves its input in build-fuzz/crashes/TARGET/ and exits non-zero: turn it into a
# regression test with the input under tests/ (tests/hostile/inputs/), then fix the reader.
#
#   scripts/fuzz.sh TARGET SECONDS     one target (fuzz_ptx, fuzz_fatbin, fuzz_plan, fuzz_trace_json,
#                                      fuzz_import_kineto, fuzz_import_nsys, fuzz_import_kfuse, fuzz_import_kfuse_json,
#                                      fuzz_import_et, fuzz_report) for a time, growing its corpus in build-fuzz/corpus/
#   scripts/fuzz.sh all SECONDS        every target, SECONDS each
#   scripts/fuzz.sh TARGET|all --runs N  repeatable: N inputs each, seed 1, from the seeds alone (a fresh corpus),
#                                      so every run tries the same inputs (what CI runs)
#   scripts/fuzz.sh --list             the targets
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
targets=(fuzz_ptx fuzz_fatbin fuzz_plan fuzz_trace_json fuzz_import_kineto fuzz_import_nsys fuzz_import_kfuse
         fuzz_import_kfuse_json fuzz_import_et fuzz_report)
if [[ "${1:-}" == "--list" ]]; then printf '%s\n' "${targets[@]}"; exit 0; fi
runs=""
if [[ $# -eq 3 && "$2" == --runs ]]; then
  runs=$3
elif [[ $# -ne 2 ]]; then
  echo "usage: scripts/fuzz.sh TARGET|all SECONDS, or TARGET|all --runs N (scripts/fuzz.sh --list for the targets)" >&2
  exit 2
fi
target=$1 seconds=${2}
[[ -n "$runs" ]] && seconds=""
if [[ "$target" == all ]]; then
  selected=("${targets[@]}")
else
  selected=("$target")
fi
fuzz_build=$KFUSE_FUZZ_BUILD
shared=${KFUSE_SHARED_DATA_DIR:-$KFUSE_ROOT/../shared/data}
kfuse_configure_instrumented
cmake --build "$fuzz_build" -j "$KFUSE_JOBS" $(printf -- '--target %s ' "${selected[@]}")

# Seeds: the inputs the tests use, per reader.
seeds_for() {
  case "$1" in
    fuzz_ptx) echo "$KFUSE_ROOT"/tests/ptx_corpus/*.ptx "$KFUSE_ROOT"/analyzer/testdata/*.ptx \
                   "$KFUSE_ROOT"/rewriter/testdata/*.ptx "$KFUSE_ROOT"/tests/hostile/inputs/*.ptx
              find "$KFUSE_BUILD/tests/ptx_corpus" -maxdepth 2 -name '*.plain.ptx' 2>/dev/null | head -10 ;;
    fuzz_fatbin) # the PTX corpus's nvcc executables (each fatbin compression mode), where the regular build made them
                 find "$KFUSE_BUILD/tests/ptx_corpus" -maxdepth 2 -type f -perm -u+x -size -1024k 2>/dev/null | head -8
                 echo "$KFUSE_ROOT"/tests/ptx_corpus/malformed.ptx ;;
    fuzz_plan) echo "$KFUSE_ROOT"/rewriter/inject/testdata/chain-plan/plan.json ;;
    fuzz_trace_json|fuzz_import_kfuse_json)
      echo "$KFUSE_ROOT"/tests/hostile/inputs/*.json "$KFUSE_ROOT"/examples/traces/demo_chain.json ;;
    fuzz_import_kineto) echo "$shared"/kineto/hta_simple_add.json.gz "$shared"/kineto/hta_cpu_only.json.gz \
                             "$shared"/kineto/hta_event_sync_multi_stream.json.gz ;;
    fuzz_import_nsys) echo "$shared"/nsys/nsysai_mock_rtx3080.sqlite ;;
    fuzz_import_et) echo "$shared"/kineto/hta_simple_add_et.json.gz "$KFUSE_ROOT"/tests/hostile/inputs/nested_million.json.gz ;;
    fuzz_import_kfuse) ls "$fuzz_build"/seeds/demo_chain.sqlite 2>/dev/null || true ;;
    fuzz_report) echo "$KFUSE_ROOT"/tests/golden/analyze/kineto_simple_add.json \
                      "$KFUSE_ROOT"/tests/golden/analyze/emulator_elementwise_chain.json ;;
  esac
}
# A kfuse trace to start from, where the regular build's kfuse can make one.
if [[ -x "$KFUSE_BUILD/bin/kfuse" && ! -f "$fuzz_build/seeds/demo_chain.sqlite" ]]; then
  mkdir -p "$fuzz_build/seeds"
  "$KFUSE_BUILD/bin/kfuse" -q import "$KFUSE_ROOT/examples/traces/demo_chain.json" -o "$fuzz_build/seeds/demo_chain.sqlite"
fi

status=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in "${selected[@]}"; do
  corpus="$fuzz_build/corpus/$t" crashes="$fuzz_build/crashes/$t"
  # Repeatable runs start from the seeds alone, in a corpus directory of their own emptied first.
  [[ -n "$runs" ]] && corpus="$fuzz_build/corpus-runs/$t" && rm -rf "$corpus"
  mkdir -p "$corpus" "$crashes"
  seeds=()
  for s in $(seeds_for "$t"); do [[ -f "$s" ]] && seeds+=("$s"); done
  # Seed once into the corpus directory (libFuzzer reads the seeds, keeps what adds coverage).
  seed_dir="$fuzz_build/seed-dirs/$t"
  rm -rf "$seed_dir" && mkdir -p "$seed_dir"
  ((${#seeds[@]})) && cp "${seeds[@]}" "$seed_dir/"
  if [[ -n "$runs" ]]; then
    budget=(-runs="$runs" -seed=1)
    echo "fuzz: $t, $runs inputs from seed 1 (${#seeds[@]} seeds)"
  else
    budget=(-max_total_time="$seconds")
    echo "fuzz: $t for ${seconds}s (${#seeds[@]} seeds)"
  fi
  start=$(date +%s)
  if ! "$fuzz_build/fuzz/$t" "$corpus" "$seed_dir" "${budget[@]}" -timeout=20 -rss_limit_mb=2560 \
       -max_len=1048576 -artifact_prefix="$crashes/" -print_final_stats=1 >"$fuzz_build/$t.log" 2>&1; then
    echo "fuzz: $t FAILED: a crash, a leak or a sanitizer report; input in $crashes/, log $fuzz_build/$t.log" >&2
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$fuzz_build/$t.log" | head -20 >&2 || true
    status=1
  else
    echo "fuzz: $t clean in $(($(date +%s) - start)) s: $(grep -E '^stat::number_of_executed_units' "$fuzz_build/$t.log" | awk '{print $2}') runs"
  fi
done
exit $status
