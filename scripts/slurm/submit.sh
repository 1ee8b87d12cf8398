#!/usr/bin/env bash
# submit.sh TRACE_DIR REPORT_DIR [JOB_JSON]: the multi-rank analysis of a distributed job's traces as two Slurm jobs,
# an array with one `kfuse analyze` per rank trace (analyze_array.sbatch) and the merge after it (merge.sbatch).
# Prints both job ids. TRACE_DIR: the rank traces (.json, .json.gz, .sqlite files directly inside it); the list of
# them is written to REPORT_DIR/traces.txt. KFUSE (the executable), KFUSE_ANALYZE_ARGS and any sbatch option in
# SBATCH_* variables pass through to the jobs.
#
# Without Slurm, on one machine, the same in two commands:
#   ls TRACE_DIR/* | xargs -P "$(nproc)" -I{} sh -c 'kfuse analyze "$1" --no-store --json "REPORT_DIR/$(basename "$1").report.json"' _ {}
#   kfuse merge REPORT_DIR -o job.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
traces=${1:?usage: submit.sh TRACE_DIR REPORT_DIR [JOB_JSON]}
out=${2:?usage: submit.sh TRACE_DIR REPORT_DIR [JOB_JSON]}
job=${3:-$out/job.json}
mkdir -p "$out"
out=$(cd "$out" && pwd)
list=$out/traces.txt
find "$(cd "$traces" && pwd)" -maxdepth 1 -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*.sqlite' \) |
  sort >"$list"
n=$(wc -l <"$list")
if ((n == 0)); then
  echo "submit.sh: no trace files (.json, .json.gz, .sqlite) in $traces" >&2
  exit 2
fi
array=$(sbatch --parsable --array="0-$((n - 1))" "$here/analyze_array.sbatch" "$list" "$out")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterany:$array" "$here/merge.sbatch" "$out" "$job")
echo "submit.sh: $n rank traces: analyze array job $array, merge job ${merge%%;*} (writes $job)"
