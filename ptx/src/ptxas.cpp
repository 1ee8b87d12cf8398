#include "kfuse/ptx/ptxas.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"

namespace kfuse::ptx {
namespace {

bool isExecutable(const std::string& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0;
}

bool isSafeArch(const std::string& a) {
  for (char c : a) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// What to clean up when a signal ends kfuse while ptxas runs (Ctrl-C, kill): the running ptxas and its temporary
// directory. The handler only reads these slots (async-signal-safe: kill, unlink, rmdir, raise).
struct CleanupSlot {
  std::atomic<bool> used{false};
  std::atomic<pid_t> child{0};
  char dir[4096] = {};
};
CleanupSlot g_slots[16];
const int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void removeTempFiles(const char* dir) {
  char path[4096 + 16];
  for (const char* f : {"/in.ptx", "/out.cubin"}) {
    std::snprintf(path, sizeof path, "%s%s", dir, f);
    ::unlink(path);
  }
  ::rmdir(dir);
}

extern "C" void onFatalSignal(int sig) {
  for (CleanupSlot& s : g_slots) {
    if (!s.used.load()) continue;
    if (const pid_t c = s.child.load(); c > 0) ::kill(c, SIGKILL);
    removeTempFiles(s.dir);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Installs onFatalSignal for the signals whose disposition is still the default (a host program's own handlers
// are left alone), once per process.
void installCleanupHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kFatalSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = &onFatalSignal;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

// A temporary directory and the files we put in it, removed at scope exit or by onFatalSignal.
struct TempDir {
  std::string path;
  CleanupSlot* slot = nullptr;
  void track() {
    installCleanupHandlers();
    for (CleanupSlot& s : g_slots) {
      bool expected = false;
      if (path.size() < sizeof s.dir && s.used.compare_exchange_strong(expected, true)) {
        s.child = 0;
        std::memcpy(s.dir, path.c_str(), path.size() + 1);
        slot = &s;
        return;
      }
    }
  }
  void setChild(pid_t pid) {
    if (slot) slot->child = pid;
  }
  ~TempDir() {
    if (path.empty()) return;
    removeTempFiles(path.c_str());
    if (slot) {
      slot->child = 0;
      slot->used = false;
    }
  }
};

// How long one ptxas run may take: KFUSE_PTXAS_TIMEOUT seconds, default 120 (mutated PTX has kept ptxas busy for
// minutes; a real fused kernel compiles in well under a second).
int ptxasTimeoutSeconds() {
  if (const char* e = std::getenv("KFUSE_PTXAS_TIMEOUT")) {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (end != e && *end == '\0' && v > 0 && v < 86400) return static_cast<int>(v);
  }
  return 120;
}

// Runs `argv` with stdout and stderr into `log`; returns its exit status as waitpid gives it. The child dies with
// kfuse (PR_SET_PDEATHSIG), so no ptxas is left running when kfuse is killed; a child still running after
// `timeout_seconds` is killed and the run is an error naming the limit.
Expected<int> runCapturing(const std::vector<std::string>& args, TempDir& dir, std::string& log, int timeout_seconds) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ioError(std::string("cannot create a pipe: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return ioError(std::string("cannot run ") + args[0] + ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // kfuse died before the line above
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  dir.setChild(pid);
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    log.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  dir.setChild(0);
  if (timed_out) {
    return ioError(args[0] + " ran longer than " + std::to_string(timeout_seconds) +
                   " s and was stopped (KFUSE_PTXAS_TIMEOUT sets the limit in seconds)");
  }
  return status;
}

}  // namespace

Expected<std::string> findPtxas() {
  if (const char* e = std::getenv("KFUSE_PTXAS"); e && isExecutable(e)) return std::string(e);
  if (const char* path = std::getenv("PATH")) {
    std::string_view p = path;
    while (!p.empty()) {
      size_t c = p.find(':');
      std::string dir(p.substr(0, c));
      if (!dir.empty() && isExecutable(dir + "/ptxas")) return dir + "/ptxas";
      if (c == std::string_view::npos) break;
      p.remove_prefix(c + 1);
    }
  }
  if (const char* h = std::getenv("CUDA_HOME"); h && isExecutable(std::string(h) + "/bin/ptxas"))
    return std::string(h) + "/bin/ptxas";
  if (isExecutable("/usr/local/cuda/bin/ptxas")) return std::string("/usr/local/cuda/bin/ptxas");
  return notFound("ptxas not found (set KFUSE_PTXAS, add the CUDA toolkit's bin/ to PATH, or set CUDA_HOME)");
}

Expected<PtxasReport> runPtxas(std::string_view ptx, const std::string& arch, const std::string& ptxas) {
  std::string tool = ptxas;
  if (tool.empty()) {
    auto found = findPtxas();
    if (!found.ok()) return found.status();
    tool = *found;
  }
  if (!isSafeArch(arch)) return invalidArgument("bad architecture name '" + arch + "'");
  TempDir dir;
  std::string tmpl =
      (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) + "/kfuse-ptxas-XXXXXX";
  if (!::mkdtemp(tmpl.data())) return ioError("cannot create a temporary directory in " + tmpl);
  dir.path = tmpl;
  dir.track();
  {
    std::ofstream out(dir.path + "/in.ptx", std::ios::binary);
    out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!out) return ioError("cannot write " + dir.path + "/in.ptx");
  }
  std::vector<std::string> args = {tool, "-v"};
  if (!arch.empty()) args.push_back("-arch=" + arch);
  args.push_back(dir.path + "/in.ptx");
  args.push_back("-o");
  args.push_back(dir.path + "/out.cubin");
  PtxasReport rep;
  KFUSE_ASSIGN_OR_RETURN(const int st, runCapturing(args, dir, rep.log, ptxasTimeoutSeconds()));
  rep.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  if (rep.exit_code == 127 && rep.log.empty()) return ioError("cannot run " + tool);
  std::istringstream lines(rep.log);
  std::string line;
  while (std::getline(lines, line)) {
    // resource lines: "ptxas info : Used 8 registers, ...", "    0 bytes stack frame, ...", "N bytes gmem"
    if (line.find("Compile time =") != std::string::npos) continue;  // varies run to run
    if (line.rfind("ptxas info", 0) == 0 || line.rfind("    ", 0) == 0) rep.resources.push_back(line);
  }
  return rep;
}

Expected<RoundTripResult> roundTrip(std::string_view ptx, const std::string& arch, std::string_view filename) {
  auto mod = parseModule(ptx, filename);
  if (!mod.ok()) return mod.status();
  KFUSE_RETURN_IF_ERROR(verify(*mod));
  RoundTripResult r;
  r.arch = arch.empty() ? mod->primaryTarget() : arch;
  r.printed = printModule(*mod);
  auto a = runPtxas(ptx, r.arch);
  if (!a.ok()) return a.status();
  r.original = std::move(a).value();
  auto b = runPtxas(r.printed, r.arch);
  if (!b.ok()) return b.status();
  r.reprinted = std::move(b).value();
  if (r.original.exit_code != 0) {
    r.difference = "ptxas rejects the original: " + r.original.log;
    return r;
  }
  if (r.reprinted.exit_code != 0) {
    r.difference = "ptxas rejects the printed PTX: " + r.reprinted.log;
    return r;
  }
  const auto& x = r.original.resources;
  const auto& y = r.reprinted.resources;
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const std::string a1 = i < x.size() ? x[i] : "<missing>";
    const std::string b1 = i < y.size() ? y[i] : "<missing>";
    if (a1 != b1) {
      r.difference = "original: " + a1 + " | printed: " + b1;
      return r;
    }
  }
  r.holds = true;
  return r;
}

std::string printForArch(Module module, const std::string& arch) {
  module.target = arch;
  return printModule(module);
}

}  // namespace kfuse::ptx
