#!/usr/bin/env bash
# gpu_check.sh BUILD_DIR OUT_DIR
# The checks that need a GPU, on a machine with a driver and a device, over an existing build (scripts/test.sh or
# scripts/demo.sh made it):
#   1. the `gpu`-labelled CTest tests (recording with CUPTI, metrics, validation through the real driver);
#   2. `kfuse demo` on this GPU;
#   3. each example program, driver API and runtime API (`<<<>>>`), taken through the whole story: run alone,
#      recorded (CUPTI), analyzed, rewritten (--all; validated on the emulator), each plan validated again on the
#      GPU, run with the fused kernels injected (`kfuse run --validate`) and recorded that way; the checksums the
#      program prints and the GPU kernel times before and after are compared (cuda_graphs and graph_branches: the
#      CUPTI backend recording CUDA graphs, and plans over graph nodes put in at instantiate);
#   4. where python3 has PyTorch with CUDA: examples/pytorch/mlp_eager.py recorded by `kfuse record` (CUPTI), and
#      its PyTorch profiler trace, both analyzed.
# Everything lands in OUT_DIR (logs, traces' summaries, summary.tsv). Without a GPU driver it says so and runs part 3
# on kfuse's CPU stand-in (LD_LIBRARY_PATH at BUILD_DIR/standin), which is a dry run of the script, nothing more.
# Part 3 also writes OUT_DIR/calibration.tsv, one row per plan: the cost model's predicted saving per occurrence
# (the plan's `prediction`) against the measured ones (`kfuse run --validate`'s `timing`, and `kfuse validate
# --backend gpu`'s timing in plan.json), and OUT_DIR/calibration.md, that table with each plan's relative error
# and whether the plans rank the same by predicted and by measured saving (scripts/calibration_table.py). Measured
# columns say "not timed" where there is no GPU time (the stand-in).
set -uo pipefail
build=$(cd "${1:?usage: gpu_check.sh BUILD_DIR OUT_DIR}" && pwd)
out=${2:?usage: gpu_check.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
kfuse=$build/bin/kfuse
work=$(mktemp -d "${TMPDIR:-/tmp}/kfuse_gpu_check.XXXXXX")
trap 'rm -rf "$work"' EXIT

if command -v nvidia-smi >/dev/null && nvidia-smi -L >"$out/nvidia-smi.txt" 2>&1; then
  gpu=yes
  nvidia-smi >>"$out/nvidia-smi.txt" 2>&1
  echo "gpu_check: $(head -1 "$out/nvidia-smi.txt")"
else
  gpu=no
  echo "gpu_check: no GPU driver here: running the examples on the CPU stand-in (a dry run of this script)"
  export LD_LIBRARY_PATH=$build/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

step() {  # step NAME LOG CMD...: runs CMD with its output in LOG, prints one line
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  timeout "${KFUSE_GPU_CHECK_STEP_S:-240}" "$@" >"$log" 2>&1
  local rc=$?
  printf 'gpu_check: %-58s exit %-3d %3d s\n' "$name" "$rc" "$((SECONDS - t0))"
  return $rc
}

if [[ $gpu == yes ]]; then
  step "ctest -L gpu" "$out/ctest_gpu.log" ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300
  step "kfuse demo" "$out/demo.log" "$kfuse" demo -o "$work/demo"
  cp "$work/demo"/*.json "$out/" 2>/dev/null
fi

checksum() { grep -Eo 'checksum [-0-9.e+]+' "$1" | tail -1 | cut -d' ' -f2; }
busy() { "$kfuse" info --json "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_gpu_kernel_ns"])' 2>/dev/null || echo "?"; }

# calibration ROWS_FILE PROGRAM RUN_STATS KERNEL_NS_BEFORE KERNEL_NS_AFTER PLAN_DIR...: appends one row per plan.
calibration() {
  python3 - "$@" <<'PY'
import json, os, sys
rows, program, stats_path, before, after, *plans = sys.argv[1:]
try:
    stats = {os.path.realpath(p["dir"]): p for p in json.load(open(stats_path))["plans"]}
except (OSError, ValueError, KeyError):
    stats = {}
with open(rows, "a") as out:
    for d in plans:
        try:
            plan = json.load(open(os.path.join(d, "plan.json")))
        except (OSError, ValueError):
            continue
        pr = plan.get("prediction", {})
        run = stats.get(os.path.realpath(d), {})
        t = run.get("timing")
        if t:
            measured = [t["originals_ns"], t["fused_ns"], t["originals_ns"] - t["fused_ns"]]
        else:
            measured = ["not timed"] * 3
        why = run.get("not_timed") or ("not run" if not run else "")
        v = plan.get("validation", {}).get("timing") or {}
        if v.get("argument_sets") and not v.get("not_timed"):
            validate_saving = (v["originals_ns"] - v["fused_ns"]) / v["argument_sets"]
        else:
            validate_saving = "not timed"
        cells = [program, os.path.basename(d), plan.get("fusion", ""), pr.get("measured_ns", ""),
                 pr.get("fused_ns", ""), pr.get("saving_ns", ""), pr.get("occurrences", ""), *measured,
                 validate_saving, before, after, why]
        out.write("\t".join(str(c) for c in cells) + "\n")
PY
}

printf 'program\tplan\tfusion\tpredicted_originals_ns\tpredicted_fused_ns\tpredicted_saving_ns\toccurrences\tmeasured_originals_ns\tmeasured_fused_ns\tmeasured_saving_ns\tvalidate_saving_ns\tkernel_ns_before\tkernel_ns_after\tnot_timed\n' \
  >"$out/calibration.tsv"
printf 'program\tcandidates\tplans\tgpu_validated\tchecksum_alone\tchecksum_fused\tkernel_ns_before\tkernel_ns_after\tfused_occurrences\n' >"$out/summary.tsv"
for exe in "$build"/examples/driver_api/{elementwise_chain,mlp_block,many_small_kernels,reduction,stencil} \
           "$build"/examples/runtime_api/{elementwise_chain,mlp_block,many_small_kernels,reduction,stencil,templates,struct_args} \
           "$build"/examples/runtime_api/{cuda_graphs,graph_branches}; do
  [[ -x $exe ]] || continue
  name=$(basename "$(dirname "$exe")")_$(basename "$exe")
  d=$work/$name
  mkdir -p "$d"
  step "$name: alone" "$out/$name.alone.log" "$exe"
  step "$name: record" "$out/$name.record.log" "$kfuse" record -f -o "$d/before.sqlite" -- "$exe"
  cp "$d/before.sqlite" "$out/$name.sqlite" 2>/dev/null
  step "$name: analyze" "$out/$name.analyze.log" "$kfuse" analyze "$d/before.sqlite" --top 5 --no-store \
    --json "$out/$name.analyze.json"
  step "$name: rewrite --all" "$out/$name.rewrite.log" "$kfuse" rewrite "$d/before.sqlite" --all -o "$d/plans"
  plans=()
  validated=0
  for p in "$d"/plans/candidate-*; do
    [[ -f $p/plan.json ]] || continue
    plans+=(--plan "$p")
    if [[ $gpu == yes ]] &&
       step "$name: validate $(basename "$p") on the GPU" "$out/$name.$(basename "$p").validate.log" \
         "$kfuse" validate "$p" --backend gpu; then
      validated=$((validated + 1))
    fi
  done
  after_sum="-" after_busy="-" fused="-"
  if ((${#plans[@]})); then
    step "$name: run with fused kernels" "$out/$name.fused.log" \
      "$kfuse" run "${plans[@]}" --validate --stats "$out/$name.run.json" -- "$exe"
    after_sum=$(checksum "$out/$name.fused.log")
    fused=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["fused_launches"])' "$out/$name.run.json" 2>/dev/null || echo "?")
    step "$name: record with fused kernels" "$out/$name.record_fused.log" \
      "$kfuse" record -f -o "$d/after.sqlite" -- "$kfuse" run "${plans[@]}" -- "$exe"
    after_busy=$(busy "$d/after.sqlite")
  fi
  plan_dirs=()
  for ((i = 1; i < ${#plans[@]}; i += 2)); do plan_dirs+=("${plans[i]}"); done
  ((${#plan_dirs[@]})) && calibration "$out/calibration.tsv" "$name" "$out/$name.run.json" \
    "$(busy "$d/before.sqlite")" "$after_busy" "${plan_dirs[@]}"
  ncand=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("candidates", [])))' \
    "$out/$name.analyze.json" 2>/dev/null || echo "?")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$ncand" "$((${#plans[@]} / 2))" "$validated" \
    "$(checksum "$out/$name.alone.log")" "$after_sum" "$(busy "$d/before.sqlite")" "$after_busy" "$fused" \
    >>"$out/summary.tsv"
done
column -t -s $'\t' "$out/summary.tsv" 2>/dev/null || cat "$out/summary.tsv"
if python3 "$(dirname "$0")/calibration_table.py" "$out/calibration.tsv" >"$out/calibration.md"; then
  echo "gpu_check: predicted against measured savings: $out/calibration.md"
else
  echo "gpu_check: calibration_table.py failed (see $out/calibration.md)"
fi

if [[ $gpu == yes ]] && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  src=$(cd "$(dirname "$0")/.." && pwd)
  mlp=$src/examples/pytorch/mlp_eager.py
  step "pytorch mlp_eager: alone" "$out/pytorch.alone.log" python3 "$mlp"
  step "pytorch mlp_eager: record" "$out/pytorch.record.log" "$kfuse" record -f -o "$work/pytorch.sqlite" -- python3 "$mlp"
  step "pytorch mlp_eager: info" "$out/pytorch.info.log" "$kfuse" info "$work/pytorch.sqlite"
  step "pytorch mlp_eager: analyze" "$out/pytorch.analyze.log" "$kfuse" analyze "$work/pytorch.sqlite" --top 8 \
    --no-store --json "$out/pytorch.analyze.json"
  step "pytorch mlp_eager: profiler trace" "$out/pytorch.profile.log" python3 "$mlp" --profile "$work/kineto.json"
  gzip -c "$work/kineto.json" >"$out/pytorch_kineto.json.gz"
  step "pytorch mlp_eager: analyze profiler trace" "$out/pytorch.kineto_analyze.log" "$kfuse" analyze \
    "$work/kineto.json" --top 8 --json "$out/pytorch.kineto_analyze.json"
fi
