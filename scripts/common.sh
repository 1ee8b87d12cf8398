# Shared by the scripts in this folder: paths, the CUDA toolkit on PATH, configure + build.
KFUSE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KFUSE_BUILD=${KFUSE_BUILD:-$KFUSE_ROOT/build}
KFUSE_JOBS=${KFUSE_JOBS:-$(nproc)}
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

# The configuration scripts/demo.sh and scripts/test.sh share, so that either reuses the other's build: optimised,
# warnings as errors, and no debug info (it costs a third of the compile time; the CMake presets keep it for
# development).
KFUSE_SCRIPT_CMAKE_ARGS=(-DKFUSE_WERROR=ON -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
  "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG")

# kfuse_configure [extra cmake args...]
kfuse_configure() {
  echo "kfuse: configuring in $KFUSE_BUILD"
  cmake -S "$KFUSE_ROOT" -B "$KFUSE_BUILD" -G Ninja "$@" >"$KFUSE_BUILD/configure.log" 2>&1 || {
    cat "$KFUSE_BUILD/configure.log" >&2
    echo "kfuse: configure failed (log above)" >&2
    return 1
  }
}

# kfuse_build [targets...]
kfuse_build() {
  echo "kfuse: building ${*:-everything} with $KFUSE_JOBS jobs"
  local args=()
  for t in "$@"; do args+=(--target "$t"); done
  cmake --build "$KFUSE_BUILD" -j "$KFUSE_JOBS" "${args[@]}"
}
