#!/usr/bin/env bash
# Formats the project's C++ sources with the repository's .clang-format, or checks that they are formatted.
#   scripts/format.sh           rewrite every tracked *.cpp and *.h in place
#   scripts/format.sh --check   list the files clang-format would change and fail if there is one (CI runs this)
# CUDA sources (*.cu, *.cuh) are left as written: they are test programs whose exact text some committed PTX and
# red-team cases were generated from.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=fix
case "${1:-}" in
  --check) mode=check ;;
  "") ;;
  -h | --help)
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "format.sh: unknown option '$1' (try --help)" >&2
    exit 2
    ;;
esac
if ! command -v clang-format >/dev/null; then
  echo "format.sh: clang-format is not installed (scripts/setup-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [[ $mode == fix ]]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 -P "$(nproc)" clang-format -i --style=file
  echo "format.sh: formatted ${#files[@]} files with $(clang-format --version)"
  exit 0
fi
unformatted=()
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then unformatted+=("$f"); fi
done
if ((${#unformatted[@]})); then
  echo "format.sh: ${#unformatted[@]} of ${#files[@]} files are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "format.sh: run scripts/format.sh to format them" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} C++ files are formatted ($(clang-format --version))"
