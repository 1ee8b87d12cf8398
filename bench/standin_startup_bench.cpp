// Start-up cost of a CUDA runtime program on the CPU stand-in libcuda.so.1: each iteration starts
// bench/kernels/startup_probe (nvcc defaults, static cudart) with the stand-in on LD_LIBRARY_PATH and waits for
// it. Reported: the wall time of the whole process (the iteration time, real time) and, as the counter
// first_cudaMalloc_ms, the time the probe measured from main until its first cudaMalloc returned (cudart's
// initialisation: driver lookups, export tables, the integrity handshake, the primary context, the fatbin load).
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

// Runs the probe; returns its first-cudaMalloc time in microseconds, or -1 on failure.
long long runProbe() {
  int out[2];
  if (pipe(out) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("LD_LIBRARY_PATH=", 0) != 0) env_store.emplace_back(*e);
  env_store.push_back(std::string("LD_LIBRARY_PATH=") + KFUSE_STANDIN_DIR);
  std::vector<char*> env;
  for (auto& s : env_store) env.push_back(s.data());
  env.push_back(nullptr);
  char probe[] = KFUSE_STARTUP_PROBE;
  char* argv[] = {probe, nullptr};
  pid_t pid;
  int rc = posix_spawn(&pid, probe, &fa, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return -1;
  }
  std::string text;
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  long long us = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) std::sscanf(text.c_str(), "first_cudaMalloc_us %lld", &us);
  return us;
}

void BM_RuntimeProgramStartup(benchmark::State& state) {
  double total_us = 0;
  for (auto _ : state) {
    long long us = runProbe();
    if (us < 0) {
      state.SkipWithError("startup_probe failed (is the stand-in built?)");
      return;
    }
    total_us += double(us);
  }
  state.counters["first_cudaMalloc_ms"] = benchmark::Counter(total_us / 1000.0 / double(state.iterations()));
}
BENCHMARK(BM_RuntimeProgramStartup)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(20);

}  // namespace

BENCHMARK_MAIN();
