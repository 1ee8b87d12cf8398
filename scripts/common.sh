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

# The one instrumented build (clang; ASan + UBSan + libFuzzer's coverage; build-fuzz/) that scripts/sanitize.sh asan
# runs the tests in and scripts/fuzz.sh builds its targets in: one extra full build, not two.
KFUSE_FUZZ_BUILD=${KFUSE_FUZZ_BUILD:-$KFUSE_ROOT/build-fuzz}
# kfuse_configure_instrumented [extra cmake args...]
kfuse_configure_instrumented() {
  mkdir -p "$KFUSE_FUZZ_BUILD"
  [[ -f "$KFUSE_FUZZ_BUILD/build.ninja" ]] && grep -q '^KFUSE_BUILD_TESTS:BOOL=ON' "$KFUSE_FUZZ_BUILD/CMakeCache.txt" &&
    return 0
  echo "kfuse: configuring the instrumented build in $KFUSE_FUZZ_BUILD (clang, ASan + UBSan + libFuzzer)"
  cmake -S "$KFUSE_ROOT" -B "$KFUSE_FUZZ_BUILD" -G Ninja -DKFUSE_FUZZ=ON -DKFUSE_BUILD_TESTS=ON \
    -DKFUSE_BUILD_BENCH=OFF -DKFUSE_BUILD_GUI=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g0" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g0" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "$@" >"$KFUSE_FUZZ_BUILD/configure.log" 2>&1 || {
    cat "$KFUSE_FUZZ_BUILD/configure.log" >&2
    echo "kfuse: configure failed (log above)" >&2
    return 1
  }
}

# kfuse_ctest_private_tmp LABEL ctest-args...: runs ctest in the current directory with a private TMPDIR and fails
# (returns 1) when the tests leave anything in it, or when ctest fails. Prints how long the tests took.
kfuse_ctest_private_tmp() {
  local label=$1
  shift
  local test_tmp status=0 start
  test_tmp=$(mktemp -d)
  start=$(date +%s)
  TMPDIR=$test_tmp ctest "$@" || status=$?
  echo "$label: tests took $(($(date +%s) - start)) s"
  if [[ -n "$(ls -A "$test_tmp")" ]]; then
    echo "$label: the tests left files in the temporary directory:" >&2
    ls -A "$test_tmp" | head -20 >&2
    status=1
  fi
  rm -rf "$test_tmp"
  return "$status"
}
