#include "kfuse/collector/program.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#if defined(__SANITIZE_ADDRESS__)
#define KFUSE_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KFUSE_ADDRESS_SANITIZER 1
#endif
#endif
#ifdef KFUSE_ADDRESS_SANITIZER
extern "C" void __asan_init();
#endif

namespace kfuse::collector {
namespace fs = std::filesystem;

namespace {

bool isFile(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Expected<std::string> findKfuseLibrary(const std::string& file, const char* env_var, const std::string& build_copy) {
  if (const char* env = std::getenv(env_var); env && *env) {
    if (isFile(env)) return std::string(env);
    return notFound(std::string(env_var) + "=" + env + ": no such file");
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path candidate = exe.parent_path() / ".." / "lib" / file;
    if (isFile(candidate.string())) return fs::weakly_canonical(candidate, ec).string();
  }
  if (!build_copy.empty() && isFile(build_copy)) return build_copy;
  return notFound("cannot find " + file +
                  " (looked next to the kfuse executable in ../lib and in the build tree); set " + env_var);
}

std::string preloadList(const std::string& library, const std::string& current, bool after_injector) {
  if (current.empty()) return library;
  if (after_injector) {
    // LD_PRELOAD separates entries with ':' or spaces; kfuse writes ':'.
    const size_t at = current.find("libkfuse_inject.so");
    if (at != std::string::npos) {
      const size_t end = current.find_first_of(": ", at);
      if (end == std::string::npos) return current + ":" + library;
      return current.substr(0, end) + ":" + library + current.substr(end);
    }
  }
  return library + ":" + current;
}

std::string sanitizerRuntime() {
#ifdef KFUSE_ADDRESS_SANITIZER
  // The file that defines the runtime's entry point: the executable itself when the runtime is linked in statically
  // (then nothing can be preloaded for it), else the shared runtime.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&__asan_init), &info) == 0 || !info.dli_fname) return "";
  const std::string file = fs::path(info.dli_fname).filename().string();
  const bool asan = file.rfind("libasan", 0) == 0 || file.rfind("libclang_rt.asan", 0) == 0;
  if (!asan || file.find(".so") == std::string::npos) return "";
  return info.dli_fname;
#else
  return "";
#endif
}

std::string withSanitizerRuntime(const std::string& preload) {
  const std::string runtime = sanitizerRuntime();
  if (runtime.empty() || preload.rfind(runtime, 0) == 0) return preload;
  return preload.empty() ? runtime : runtime + ":" + preload;
}

Expected<ProgramRun> runProgram(const std::vector<std::string>& command,
                                const std::vector<std::pair<std::string, std::string>>& environment,
                                const std::string& output_file, int inherit_fd) {
  if (command.empty()) return invalidArgument("no program to run");
  std::vector<std::pair<std::string, std::string>> env = environment;
  for (auto& [name, value] : env) {
    if (name == "LD_PRELOAD") value = withSanitizerRuntime(value);
  }
  int out_fd = -1;
  if (!output_file.empty()) {
    out_fd = open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) return ioError(output_file + ": cannot create: " + std::strerror(errno));
  }
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  const pid_t pid = fork();
  if (pid < 0) {
    if (out_fd >= 0) close(out_fd);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    return ioError(std::string("cannot start the program: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    if (inherit_fd >= 0) fcntl(inherit_fd, F_SETFD, fcntl(inherit_fd, F_GETFD) & ~FD_CLOEXEC);
    if (out_fd >= 0) {
      dup2(out_fd, STDOUT_FILENO);
      dup2(out_fd, STDERR_FILENO);
    }
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "kfuse: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  if (out_fd >= 0) close(out_fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  ProgramRun run;
  run.pid = pid;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  return run;
}

}  // namespace kfuse::collector
