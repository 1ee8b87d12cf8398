#!/usr/bin/env bash
# Installs the Debian packages kfuse builds and tests with, only those that are missing. Idempotent.
# Expects the CUDA toolkit (>= 13.0) to be installed already (nvcc on PATH or in /usr/local/cuda).
# Usage: scripts/setup-deps.sh [--gui]   (--gui adds Qt6 for kfuse-gui)
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config python3
  libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev libfmt-dev libsimdjson-dev
  libzstd-dev liblz4-dev zlib1g-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev python3-jsonschema
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer (Debian 12's clang is 14)
  clang-format              # scripts/format.sh --check, run by scripts/test.sh
)
if [[ "${1:-}" == "--gui" ]]; then
  packages+=(qt6-base-dev libqt6charts6-dev libqt6opengl6-dev libgraphviz-dev xvfb)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup-deps: all ${#packages[@]} Debian packages already installed"
else
  echo "setup-deps: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  # Refresh the package lists once if they were never fetched (a fresh machine), or if the install fails.
  if [[ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ]]; then
    echo "setup-deps: apt-get update"
    $sudo apt-get update -qq
  fi
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    echo "setup-deps: apt-get update and retry"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup-deps: the CUDA toolkit (nvcc) was not found on PATH or in /usr/local/cuda." >&2
  echo "            Install CUDA >= 13.0, or set PATH to include its bin/ folder." >&2
  exit 1
fi
echo "setup-deps: CUDA toolkit: $(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
