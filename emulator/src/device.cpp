#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "interp.h"
#include "kfuse/core/log.h"
#include "kfuse/ptx/fatbin.h"
#include "kfuse/ptx/parser.h"
#include "worker_pool.h"

namespace kfuse::emulator {

const char* instClassName(InstClass c) {
  switch (c) {
    case InstClass::kInteger: return "integer";
    case InstClass::kFp16: return "fp16";
    case InstClass::kFp32: return "fp32";
    case InstClass::kFp64: return "fp64";
    case InstClass::kConvert: return "convert";
    case InstClass::kMove: return "move";
    case InstClass::kLoad: return "load";
    case InstClass::kStore: return "store";
    case InstClass::kAtomic: return "atomic";
    case InstClass::kControl: return "control";
    case InstClass::kSync: return "sync";
    case InstClass::kWarp: return "warp";
    case InstClass::kOther: return "other";
    default: return "?";
  }
}

void LaunchCounters::add(const LaunchCounters& o) {
  thread_instructions += o.thread_instructions;
  warp_instructions += o.warp_instructions;
  for (size_t i = 0; i < kInstClassCount; ++i) by_class[i] += o.by_class[i];
  global_load_bytes += o.global_load_bytes;
  global_store_bytes += o.global_store_bytes;
  shared_load_bytes += o.shared_load_bytes;
  shared_store_bytes += o.shared_store_bytes;
  local_load_bytes += o.local_load_bytes;
  local_store_bytes += o.local_store_bytes;
  global_atomics += o.global_atomics;
  shared_atomics += o.shared_atomics;
  flops_f16 += o.flops_f16;
  flops_f32 += o.flops_f32;
  flops_f64 += o.flops_f64;
  blocks += o.blocks;
  threads += o.threads;
}

Program::~Program() {
  if (memory_)
    for (auto& g : globals_) (void)memory_->free(g.address);
}

const Kernel* Program::findKernel(std::string_view name) const {
  for (auto& k : kernels_)
    if (k->info().name == name) return k.get();
  return nullptr;
}

const GlobalSymbol* Program::findGlobal(std::string_view name) const {
  for (auto& g : globals_)
    if (g.name == name) return &g;
  return nullptr;
}

Device::Device(unsigned worker_threads) {
  unsigned n = worker_threads;
  if (n == 0) {
    if (const char* e = std::getenv("KFUSE_EMU_THREADS")) n = unsigned(std::max(1, std::atoi(e)));
  }
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  workers_ = n;
  pool_ = std::make_unique<WorkerPool>(n);
}

Device::~Device() = default;

void Device::setWorkerThreads(unsigned n) {
  workers_ = std::max(1u, n);
  pool_ = std::make_unique<WorkerPool>(workers_);
}

Expected<std::shared_ptr<Program>> Device::loadPtx(std::string_view ptx, std::string_view name) {
  auto module = ptx::parseModule(ptx, name);
  if (!module.ok()) return module.status();
  std::shared_ptr<Program> prog(new Program());
  prog->name_ = std::string(name);
  prog->impl_ = std::make_unique<Program::Impl>();
  prog->memory_ = &memory_;
  Status s = decodeModule(*module, memory_, prog->impl_.get(), &prog->globals_, prog->name_);
  if (!s.ok()) return s.withContext(std::string(name));
  for (auto& f : prog->impl_->functions) {
    if (!f->is_entry) continue;
    auto k = std::unique_ptr<Kernel>(new Kernel());
    k->info_ = f->info;
    k->program_ = prog.get();
    k->fn_ = f.get();
    k->load_status_ = f->status;
    if (!f->status.ok())
      core::logWarning("emulator: " + std::string(name) + ": " + f->status.message() + " (launching it will fail)");
    prog->kernels_.push_back(std::move(k));
  }
  return prog;
}

Expected<std::shared_ptr<Program>> Device::loadImage(std::span<const uint8_t> image, std::string_view name) {
  // PTX text: starts (after blanks/comments) with printable text and contains ".version".
  bool is_text = !image.empty() && std::find(image.begin(), image.end(), uint8_t(0)) - image.begin() > 16;
  if (is_text) {
    std::string_view sv(reinterpret_cast<const char*>(image.data()), image.size());
    size_t nul = sv.find('\0');
    if (nul != std::string_view::npos) sv = sv.substr(0, nul);
    if (sv.find(".version") != std::string_view::npos && sv.find(".target") != std::string_view::npos)
      return loadPtx(sv, name);
  }
  auto entries = ptx::listEntries(image);
  if (!entries.ok()) return entries.status().withContext(std::string(name));
  const ptx::FatbinEntry* best = nullptr;
  for (auto& e : *entries) {
    if (e.kind != ptx::EntryKind::kPtx) continue;
    if (e.arch > 90) continue;
    if (!best || e.arch > best->arch) best = &e;
  }
  if (!best) {
    for (auto& e : *entries)
      if (e.kind == ptx::EntryKind::kPtx && (!best || e.arch < best->arch)) best = &e;
  }
  if (!best) {
    // SASS only: say which architectures and kernels it holds and how to add PTX.
    std::string archs, kernels;
    for (auto& e : *entries) {
      if (e.kind != ptx::EntryKind::kCubin) continue;
      std::string a = "sm_" + std::to_string(e.arch);
      if (archs.find(a) == std::string::npos) archs += (archs.empty() ? "" : ", ") + a;
      for (auto& k : e.kernels)
        if (kernels.find(k) == std::string::npos && kernels.size() < 200) kernels += (kernels.empty() ? "" : ", ") + k;
    }
    return unsupported(std::string(name) + ": the image holds no PTX" +
                       (archs.empty() ? std::string() : ", only cubins for " + archs) +
                       (kernels.empty() ? std::string() : " (kernels " + kernels + ")") +
                       "; the emulator runs PTX only: rebuild with PTX for a virtual architecture, e.g. nvcc "
                       "-gencode arch=compute_90,code=compute_90 (or keep the SASS and add it: "
                       "-gencode arch=compute_90,code=[sm_90,compute_90])");
  }
  auto text = ptx::extractEntry(image, *best);
  if (!text.ok()) return text.status().withContext(std::string(name));
  return loadPtx(*text, name);
}

std::vector<uint8_t> Device::packParams(const KernelInfo& info, void* const* args) {
  std::vector<uint8_t> buf(info.param_bytes, 0);
  for (size_t i = 0; i < info.params.size(); ++i) {
    if (!args || !args[i]) continue;
    std::memcpy(buf.data() + info.params[i].offset, args[i], info.params[i].size);
  }
  return buf;
}

Status Device::launch(const Kernel& kernel, const core::LaunchShape& config, std::span<const uint8_t> params,
                      LaunchCounters* counters) {
  if (!kernel.loadStatus().ok()) {
    LaunchRecord r;
    r.kernel = kernel.info().name;
    r.grid = config.grid;
    r.block = config.block;
    r.ok = false;
    r.error = kernel.loadStatus().message();
    record(std::move(r));
    return kernel.loadStatus();
  }
  LaunchRequest req;
  req.fn = kernel.fn_;
  req.program = &kernel.program().impl();
  req.config = config;
  req.params = params;
  req.memory = &memory_;
  req.workers = workers_;
  req.pool = pool_.get();
  req.printf_sink = printf_sink_;
  req.max_warp_instructions = max_warp_instructions_;
  LaunchCounters cnt;
  auto t0 = std::chrono::steady_clock::now();
  Status s = runLaunch(req, &cnt);
  auto t1 = std::chrono::steady_clock::now();
  LaunchRecord r;
  r.kernel = kernel.info().name;
  r.grid = config.grid;
  r.block = config.block;
  r.dynamic_shared_bytes = config.dynamic_shared_bytes;
  r.counters = cnt;
  r.wall_seconds = std::chrono::duration<double>(t1 - t0).count();
  r.ok = s.ok();
  r.error = s.message();
  record(std::move(r));
  if (counters) *counters = cnt;
  return s;
}

namespace {
thread_local uint64_t t_last_sequence = 0;
}  // namespace

uint64_t Device::callingThreadLastSequence() {
  return t_last_sequence;
}

void Device::record(LaunchRecord r) {
  LaunchObserver obs;
  {
    std::lock_guard lock(history_mu_);
    r.sequence = ++sequence_;
    t_last_sequence = r.sequence;
    total_.add(r.counters);
    if (history_.size() >= historyLimit()) history_.erase(history_.begin());
    history_.push_back(r);
    obs = observer_;
  }
  if (obs) obs(r);
}

std::vector<LaunchRecord> Device::launchHistory() const {
  std::lock_guard lock(history_mu_);
  return history_;
}

LaunchRecord Device::lastLaunch() const {
  std::lock_guard lock(history_mu_);
  return history_.empty() ? LaunchRecord{} : history_.back();
}

LaunchCounters Device::totalCounters() const {
  std::lock_guard lock(history_mu_);
  return total_;
}

void Device::clearHistory() {
  std::lock_guard lock(history_mu_);
  history_.clear();
  total_ = LaunchCounters{};
}

void Device::setLaunchObserver(LaunchObserver observer) {
  std::lock_guard lock(history_mu_);
  observer_ = std::move(observer);
}

void Device::setPrintfSink(std::function<void(std::string_view)> sink) {
  printf_sink_ = std::move(sink);
}

}  // namespace kfuse::emulator
