#include "kfuse/ptx/ptxas.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"

namespace kfuse::ptx {
namespace {

bool isExecutable(const std::string& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

bool isSafeArch(const std::string& a) {
  for (char c : a) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Removes a temporary directory and the files we put in it.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (path.empty()) return;
    for (const char* f : {"/in.ptx", "/out.cubin"}) ::unlink((path + f).c_str());
    ::rmdir(path.c_str());
  }
};

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
  {
    std::ofstream out(dir.path + "/in.ptx", std::ios::binary);
    out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!out) return ioError("cannot write " + dir.path + "/in.ptx");
  }
  // built with append(): GCC 12 at -O3 reports a false -Wrestrict on `" literal" + std::string&&`
  std::string cmd = shellQuote(tool);
  cmd.append(" -v");
  if (!arch.empty()) cmd.append(" -arch=").append(arch);
  cmd.append(" ").append(shellQuote(dir.path + "/in.ptx"));
  cmd.append(" -o ").append(shellQuote(dir.path + "/out.cubin")).append(" 2>&1");
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return ioError("cannot run " + tool);
  PtxasReport rep;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) rep.log.append(buf, n);
  const int st = ::pclose(p);
  rep.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
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
