#!/usr/bin/env bash
# check_run.sh EXPECTED_EXIT REGEX... -- COMMAND [ARGS...]
# Runs COMMAND, prints its output, and passes when it exits with EXPECTED_EXIT (never by a signal: a crash always
# fails) and its output (stdout and stderr) matches every REGEX (grep -E).
set -u
expected=$1
shift
regexes=()
while [[ $# -gt 0 && $1 != "--" ]]; do regexes+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if ((rc >= 128)); then echo "check_run: crashed (exit $rc, signal $((rc - 128)))"; exit 1; fi
if ((rc != expected)); then echo "check_run: exit $rc, expected $expected"; exit 1; fi
for r in "${regexes[@]}"; do
  if ! grep -Eq -- "$r" <<<"$out"; then echo "check_run: output does not match '$r'"; exit 1; fi
done
echo "check_run: ok"
