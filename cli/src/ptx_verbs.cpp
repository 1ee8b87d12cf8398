// `kfuse ptx list|extract|check|roundtrip`: thin verbs over the ptx library.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "kfuse/core/text.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/demangle.h"
#include "kfuse/ptx/fatbin.h"
#include "kfuse/ptx/loops.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/ptx/ptxas.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct PtxOptions {
  std::string input;
  std::string out_dir;
  std::string arch;
  std::string kernel;
  std::string printed_out;
  bool json = false;
  bool params = false;
};

// Parameter layout of each kernel in a cubin entry (from .nv.info), for kernels that ship without PTX.
Expected<ptx::CubinInfo> cubinInfo(const std::vector<uint8_t>& bytes, const ptx::FatbinEntry& e) {
  auto payload = ptx::extractEntry(bytes, e);
  if (!payload.ok()) return payload.status();
  return ptx::readCubin(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload->data()), payload->size()));
}

std::string stemOf(const std::string& path) {
  return fs::path(path).filename().string();
}

int runList(const PtxOptions& o) {
  auto bytes = ptx::readBinaryFile(o.input);
  if (!bytes.ok()) return reportError(bytes.status());
  auto entries = ptx::listEntries(*bytes);
  if (!entries.ok()) return reportError(entries.status().withContext(o.input));
  if (o.json) {
    json arr = json::array();
    for (const auto& e : *entries) {
      arr.push_back({{"container", e.container},
                     {"fatbin", e.fatbin_index},
                     {"entry", e.entry_index},
                     {"kind", ptx::entryKindName(e.kind)},
                     {"arch", e.arch ? "sm_" + std::to_string(e.arch) : ""},
                     {"ptx_version", e.kind == ptx::EntryKind::kPtx && e.container != "ptx"
                                         ? std::to_string(e.ptx_major) + "." + std::to_string(e.ptx_minor)
                                         : ""},
                     {"compression", ptx::compressionName(e.compression)},
                     {"stored_bytes", e.stored_size},
                     {"bytes", e.size},
                     {"kernels", e.kernels}});
      if (o.params && e.kind == ptx::EntryKind::kCubin) {
        auto info = cubinInfo(*bytes, e);
        if (!info.ok()) return reportError(info.status().withContext(o.input));
        json layout = json::object();
        for (const auto& k : info->kernels) {
          json ps = json::array();
          for (const auto& p : k.params) ps.push_back({{"ordinal", p.ordinal}, {"offset", p.offset}, {"size", p.size}});
          layout[k.name] = {{"param_bytes", k.param_bytes}, {"params", ps}};
        }
        arr.back()["param_layout"] = layout;
      }
    }
    std::cout << core::dumpJson(json{{"file", o.input}, {"entries", arr}}, 2) << "\n";
    return kExitOk;
  }
  std::printf("%-14s %-3s %-5s %-6s %-7s %-5s %10s %10s  %s\n", "container", "fb", "entry", "kind", "arch", "comp",
              "stored", "bytes", "kernels");
  for (const auto& e : *entries) {
    std::string kernels;
    for (size_t i = 0; i < e.kernels.size(); ++i) kernels += (i ? " " : "") + e.kernels[i];
    std::printf("%-14s %-3zu %-5zu %-6s %-7s %-5s %10llu %10llu  %s\n", e.container.c_str(), e.fatbin_index,
                e.entry_index, ptx::entryKindName(e.kind), e.arch ? ("sm_" + std::to_string(e.arch)).c_str() : "-",
                ptx::compressionName(e.compression), static_cast<unsigned long long>(e.stored_size),
                static_cast<unsigned long long>(e.size), kernels.c_str());
    if (o.params && e.kind == ptx::EntryKind::kCubin) {
      auto info = cubinInfo(*bytes, e);
      if (!info.ok()) return reportError(info.status().withContext(o.input));
      for (const auto& k : info->kernels) {
        std::printf("    %s: %u parameter bytes:", k.name.c_str(), k.param_bytes);
        for (const auto& p : k.params) std::printf(" [%u]@%u+%u", p.ordinal, p.offset, p.size);
        std::printf("\n");
      }
    }
  }
  return kExitOk;
}

int runExtract(const PtxOptions& o) {
  auto bytes = ptx::readBinaryFile(o.input);
  if (!bytes.ok()) return reportError(bytes.status());
  auto entries = ptx::listEntries(*bytes);
  if (!entries.ok()) return reportError(entries.status().withContext(o.input));
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return reportError(ioError(o.out_dir + ": " + ec.message()));
  int written = 0;
  for (const auto& e : *entries) {
    if (e.kind == ptx::EntryKind::kUnknown) continue;
    auto payload = ptx::extractEntry(*bytes, e);
    if (!payload.ok()) return reportError(payload.status().withContext(o.input));
    const fs::path path = fs::path(o.out_dir) / ptx::entryFileName(e, stemOf(o.input));
    std::ofstream out(path, std::ios::binary);
    out.write(payload->data(), static_cast<std::streamsize>(payload->size()));
    if (!out) return reportError(ioError(path.string() + ": write failed"));
    std::cout << path.string() << "\n";
    ++written;
  }
  if (written == 0) {
    std::cerr << "kfuse: " << o.input << ": no PTX or cubin entries to extract (" << entries->size()
              << " entries of unknown kind)\n";
    return kExitNothingToDo;
  }
  return kExitOk;
}

json accessJson(const ptx::MemoryAccess& a) {
  json j{{"line", a.line},      {"op", a.opcode},   {"read", a.is_read},
         {"write", a.is_write}, {"bytes", a.bytes}, {"guard", a.guardText()}};
  if (a.address) {
    j["address"] = a.address->toString();
  } else {
    j["address"] = nullptr;
    j["not_affine"] = a.not_affine_reason;
  }
  if (a.base_param >= 0) {
    j["base_param"] = a.base_param;
    j["offset"] = a.offset ? a.offset->toString() : "";
  }
  return j;
}

// Checks one PTX text called `name`; JSON goes to `out` (printed by the caller), text straight to stdout.
int checkText(const std::string& text, const std::string& name, const PtxOptions& o, json& out) {
  auto mod = ptx::parseModule(text, name);
  if (!mod.ok()) return reportError(mod.status());
  Status v = ptx::verify(*mod);
  out = json{{"file", name},
             {"version", mod->version},
             {"target", mod->target},
             {"verify", v.ok() ? "ok" : v.message()},
             {"functions", json::array()}};
  if (!o.json) {
    std::cout << name << ": PTX " << mod->version << ", target " << mod->target
              << ", verify: " << (v.ok() ? "ok" : v.message()) << "\n";
  }
  // The verdict is part of the report (stdout); a failure is also a diagnostic, on stderr, for scripts and users
  // who read only that.
  if (!v.ok()) std::fprintf(stderr, "kfuse: %s: %s\n", name.c_str(), v.message().c_str());
  for (const auto& f : mod->functions) {
    if (!f.has_body) continue;
    const std::string demangled = ptx::demangle(f.name);
    if (!o.kernel.empty() && f.name.find(o.kernel) == std::string::npos &&
        demangled.find(o.kernel) == std::string::npos)
      continue;
    ptx::FunctionAnalyses fa(&*mod, f);
    auto sig = ptx::parseMangledSignature(f.name);
    auto typeOf = [&](int index) -> const ptx::ParamType* {
      if (!sig.ok() || index < 0 || static_cast<size_t>(index) >= sig->params.size()) return nullptr;
      return &sig->params[static_cast<size_t>(index)];
    };
    const auto& u = fa.usage();
    // A kernel with a loop: whether it is a grid-stride loop the fusions can run as one element per thread.
    std::string grid_stride;
    json grid_stride_json;
    const std::vector<char> in_loop = ptx::blocksInLoops(fa.cfg());
    if (f.is_entry && std::find(in_loop.begin(), in_loop.end(), 1) != in_loop.end()) {
      std::string why;
      if (auto view = ptx::gridStrideElementView(f, fa.cfg(), fa.defUse(), &why)) {
        std::string bound;
        for (int p : view->bound_params) bound += (bound.empty() ? "param" : " * param") + std::to_string(p);
        grid_stride = "one element per thread below " + bound +
                      (view->unrolled > 1 ? " (nvcc's layout, unrolled " + std::to_string(view->unrolled) + " times)"
                                          : std::string(" (one loop)"));
        grid_stride_json = {{"element_view", true},
                            {"bound_params", view->bound_params},
                            {"unrolled", view->unrolled},
                            {"offset_params", view->small_params}};
      } else {
        grid_stride = "not one element per thread: " + why;
        grid_stride_json = {{"element_view", false}, {"why", why}};
      }
    }
    if (!o.json) {
      std::cout << "\n"
                << (f.is_entry ? "entry " : "func ") << demangled << "  [" << fa.cfg().blocks().size() << " blocks]\n";
      for (const auto& a : fa.paramAccess()) {
        const ptx::ParamType* t = typeOf(a.index);
        std::cout << "  param " << a.index << " " << (t ? t->text : a.name) << ": " << ptx::accessModeName(a.mode);
        if (t) {
          if (auto h = ptx::accessHint(*t)) std::cout << " (declared: " << ptx::accessModeName(*h) << ")";
        }
        if (!a.reason.empty()) std::cout << " -- " << a.reason;
        std::cout << "\n";
      }
      for (const auto& a : fa.memoryAccesses()) {
        std::cout << "  line " << a.line << " " << a.opcode << " ["
                  << (a.address ? a.address->toString() : "not affine: " + a.not_affine_reason) << "] if "
                  << a.guardText() << "\n";
      }
      std::cout << "  usage: " << u.instructions << " instructions, shared " << u.static_shared_bytes << " B"
                << (u.dynamic_shared ? " + dynamic" : "") << ", local " << u.local_bytes << " B, barriers "
                << u.barriers << ", atomics " << u.atomics << ", shuffles " << u.shuffles << ", votes " << u.votes
                << ", textures " << u.textures << ", tensor " << u.tensor_ops << ", cp.async " << u.async_copies
                << (u.grid_sync ? ", grid sync" : "") << (u.printf ? ", printf" : "") << "\n";
      if (!grid_stride.empty()) std::cout << "  grid-stride loop: " << grid_stride << "\n";
      continue;
    }
    json params = json::array();
    for (const auto& a : fa.paramAccess()) {
      json p{{"index", a.index}, {"name", a.name}, {"mode", ptx::accessModeName(a.mode)}};
      if (!a.reason.empty()) p["reason"] = a.reason;
      if (const ptx::ParamType* t = typeOf(a.index)) {
        p["type"] = t->text;
        if (auto h = ptx::accessHint(*t)) p["type_hint"] = ptx::accessModeName(*h);
      }
      params.push_back(std::move(p));
    }
    json accesses = json::array();
    for (const auto& a : fa.memoryAccesses()) accesses.push_back(accessJson(a));
    json usage{{"instructions", u.instructions},
               {"static_shared_bytes", u.static_shared_bytes},
               {"dynamic_shared", u.dynamic_shared},
               {"local_bytes", u.local_bytes},
               {"local_accesses", u.local_accesses},
               {"barriers", u.barriers},
               {"atomics", u.atomics},
               {"shuffles", u.shuffles},
               {"votes", u.votes},
               {"grid_sync", u.grid_sync},
               {"printf", u.printf},
               {"textures", u.textures},
               {"tensor_ops", u.tensor_ops},
               {"async_copies", u.async_copies},
               {"callees", u.callees},
               {"indirect_calls", u.indirect_calls}};
    json fn{{"name", f.name},
            {"demangled", demangled},
            {"kind", f.is_entry ? "entry" : "func"},
            {"blocks", fa.cfg().blocks().size()},
            {"params", params},
            {"accesses", accesses},
            {"usage", usage}};
    if (!grid_stride_json.is_null()) fn["grid_stride"] = std::move(grid_stride_json);
    out["functions"].push_back(std::move(fn));
  }
  return v.ok() ? kExitOk : kExitCheckFailed;
}

// A .ptx file, or every PTX entry of an executable / library / fatbin.
int runCheck(const PtxOptions& o) {
  auto bytes = ptx::readBinaryFile(o.input);
  if (!bytes.ok()) return reportError(bytes.status());
  auto entries = ptx::listEntries(*bytes);
  const bool binary = bytes->size() >= 4 && ((*bytes)[0] == 0x7f || ((*bytes)[0] == 0x50 && (*bytes)[3] == 0xba));
  if (!entries.ok() && !binary) {
    // not recognisably PTX either: let the parser say what is wrong, with line and column
    json out;
    const int rc = checkText(std::string(bytes->begin(), bytes->end()), o.input, o, out);
    if (o.json && rc != kExitBadInput) std::cout << core::dumpJson(out, 2) << "\n";
    return rc;
  }
  if (!entries.ok()) return reportError(entries.status().withContext(o.input));
  json all = json::array();
  int rc = kExitOk;
  int checked = 0;
  for (const auto& e : *entries) {
    if (e.kind != ptx::EntryKind::kPtx) continue;
    auto text = ptx::extractEntry(*bytes, e);
    if (!text.ok()) return reportError(text.status().withContext(o.input));
    if (entries->size() == 1) *bytes = std::vector<uint8_t>();  // a plain .ptx file: only its text is read now
    const std::string name = e.container == "ptx" ? o.input : o.input + "#" + ptx::entryFileName(e, "ptx");
    json out;
    const int one = checkText(*text, name, o, out);
    if (one == kExitBadInput) return one;
    rc = std::max(rc, one);
    ++checked;
    all.push_back(std::move(out));
  }
  if (checked == 0) {
    std::cerr << "kfuse: " << o.input << ": contains no PTX\n";
    return kExitNothingToDo;
  }
  if (o.json) std::cout << core::dumpJson(all.size() == 1 ? all[0] : all, 2) << "\n";
  return rc;
}

int runRoundTrip(const PtxOptions& o) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) return reportError(ioError(o.input + ": cannot open"));
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = ptx::roundTrip(ss.str(), o.arch, o.input);
  if (!r.ok()) return reportError(r.status());
  if (!o.printed_out.empty()) {
    std::ofstream out(o.printed_out, std::ios::binary);
    out << r->printed;
    if (!out) return reportError(ioError(o.printed_out + ": write failed"));
  }
  if (!r->holds) {
    std::cerr << "kfuse: " << o.input << ": round trip does not hold for " << r->arch << ": " << r->difference << "\n";
    return kExitCheckFailed;
  }
  std::cout << o.input << ": round trip holds for " << r->arch << " (" << r->original.resources.size()
            << " identical ptxas resource lines)\n";
  for (const auto& line : r->original.resources) std::cout << "  " << line << "\n";
  return kExitOk;
}

}  // namespace

void registerPtxVerbs(CLI::App& app, VerbContext& ctx) {
  auto opts = std::make_shared<PtxOptions>();
  CLI::App* ptx = app.add_subcommand("ptx", "Read PTX and CUDA binaries: list, extract, check, roundtrip");
  ptx->require_subcommand(1);

  CLI::App* list = ptx->add_subcommand("list", "List the PTX/cubin entries of an executable, library, fatbin or cubin");
  list->add_option("binary", opts->input, "Executable, shared library, fatbin, cubin or PTX file")->required();
  list->add_flag("--json", opts->json, "Print JSON");
  list->add_flag("--params", opts->params, "Also print each cubin kernel's parameter layout (.nv.info)");
  list->callback([opts, &ctx] { ctx.exit_code = runList(*opts); });

  CLI::App* extract = ptx->add_subcommand("extract", "Write every PTX/cubin entry of a binary to a directory");
  extract->add_option("binary", opts->input, "Executable, shared library, fatbin or cubin")->required();
  extract->add_option("-o,--output", opts->out_dir, "Output directory")->required()->check(outputPath());
  extract->callback([opts, &ctx] { ctx.exit_code = runExtract(*opts); });

  CLI::App* check = ptx->add_subcommand("check", "Parse and verify PTX and print its analyses");
  check->add_option("file", opts->input, "PTX file, or a binary whose PTX entries are checked")->required();
  check->add_option("--kernel", opts->kernel, "Only functions whose (demangled) name contains this");
  check->add_flag("--json", opts->json, "Print JSON");
  check->callback([opts, &ctx] { ctx.exit_code = runCheck(*opts); });

  CLI::App* rt = ptx->add_subcommand("roundtrip", "parse -> print -> ptxas; exit 0 only when resources are identical");
  rt->add_option("file", opts->input, "PTX file")->required();
  rt->add_option("--arch", opts->arch, "Target for ptxas (default: the file's .target), e.g. sm_90");
  rt->add_option("-o,--output", opts->printed_out, "Also write the printed PTX here")->check(outputPath());
  rt->callback([opts, &ctx] { ctx.exit_code = runRoundTrip(*opts); });
}

}  // namespace kfuse::cli
