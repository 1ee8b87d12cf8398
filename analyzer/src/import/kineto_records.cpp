// Kineto import, phase 1c: what each event is (classify) and the compact record kept of it (collect): GPU
// operations, runtime calls, syncs, memory events, and with keep_cpu_ops the PyTorch context: CPU operators with
// their input shapes (shared between repeats) and nn.Module / user-annotation scopes. Missing or impossible fields
// are counted here, per event, in the import's stats.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "import/kineto_parse.h"

namespace kfuse::analyzer::detail::kineto {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// PyTorch names a module's forward call "nn.Module: Linear_0" (a python_function event, with_modules=True).
constexpr std::string_view kModulePrefix = "nn.Module: ";

EventClass classify(std::string_view cat, std::string_view name) {
  if (cat.empty()) return name == "[memory]" ? EventClass::kMemory : EventClass::kOther;
  if (iequals(cat, "kernel")) return EventClass::kKernel;
  if (iequals(cat, "gpu_memcpy") || iequals(cat, "memcpy")) return EventClass::kMemcpy;
  if (iequals(cat, "gpu_memset") || iequals(cat, "memset")) return EventClass::kMemset;
  if (iequals(cat, "cuda_runtime") || iequals(cat, "cuda_driver") || iequals(cat, "runtime") ||
      iequals(cat, "driver")) {
    return EventClass::kApi;
  }
  if (iequals(cat, "cuda_sync")) return EventClass::kSync;
  if (iequals(cat, "cpu_op") || iequals(cat, "operator")) return EventClass::kCpuOp;
  if (name == "[memory]") return EventClass::kMemory;
  if (iequals(cat, "user_annotation")) return EventClass::kScope;
  if (iequals(cat, "python_function") && name.substr(0, kModulePrefix.size()) == kModulePrefix)
    return EventClass::kScope;
  return EventClass::kOther;
}

}  // namespace

void KinetoParse::collect(const Fields& f) {
  if (f.ph == "M") {
    if (f.name == "process_name" && f.pid && !f.proc_name.empty()) process_names_[*f.pid] = std::string(f.proc_name);
    return;
  }
  const EventClass cls = classify(f.cat, f.name);
  if (cls == EventClass::kOther) return;
  if (f.bad_values > 0) {
    problems_.add(core::StatId::kKinetoBadFieldValues, f.bad_values);
  }
  const bool complete = f.ph.empty() || f.ph == "X";
  switch (cls) {
    case EventClass::kKernel:
    case EventClass::kMemcpy:
    case EventClass::kMemset: {
      if (!complete) {
        problems_.add(core::StatId::kKinetoGpuEventNotComplete);
        return;
      }
      if (!f.ts) {
        problems_.add(core::StatId::kKinetoGpuEventWithoutTs);
        return;
      }
      GpuOp op;
      op.cls = cls;
      op.name = intern(f.name);
      op.order = order_;
      op.start_ns = *f.ts;
      if (f.dur) {
        op.end_ns = *f.ts + *f.dur;
      } else {
        problems_.add(core::StatId::kKinetoGpuEventWithoutDur);
      }
      if (f.device) {
        op.device = *f.device;
      } else if (f.pid) {
        op.device = *f.pid;  // GPU rows use the device ordinal as their pid
      }
      if (f.stream) {
        op.stream = *f.stream;
      } else if (f.tid) {
        op.stream = *f.tid;  // "stream 7" in 2021 traces, 7 today
      }
      if (op.device < 0 || op.device > std::numeric_limits<int>::max()) {
        problems_.add(core::StatId::kKinetoGpuEventWithoutDevice);
        op.device = 0;
      }
      if (!validStream(op.stream)) {
        problems_.add(core::StatId::kKinetoGpuEventWithoutStream);
        op.stream = -1;
      }
      op.correlation = f.correlation.value_or(0);
      if (!f.correlation) {
        problems_.add(core::StatId::kKinetoGpuEventWithoutCorrelation);
      }
      op.external_id = f.external_id.value_or(0);
      if (cls == EventClass::kKernel) {
        if (f.grid && f.block) {
          op.grid = *f.grid;
          op.block = *f.block;
          op.has_config = true;
        } else {
          problems_.add(core::StatId::kKinetoKernelWithoutLaunchConfig);
        }
        if (f.registers && *f.registers >= 0 && *f.registers <= 65536) {
          op.registers = static_cast<uint32_t>(*f.registers);
          op.has_registers = true;
        } else {
          problems_.add(core::StatId::kKinetoKernelWithoutRegisters);
        }
        if (f.shared_memory && *f.shared_memory >= 0 && *f.shared_memory <= std::numeric_limits<uint32_t>::max()) {
          op.shared = static_cast<uint32_t>(*f.shared_memory);
        }
      } else {
        if (f.bytes && *f.bytes >= 0) {
          op.bytes = *f.bytes;
        } else {
          problems_.add(core::StatId::kKinetoCopyWithoutBytes);
        }
        op.copy_kind = intern(f.copy_kind);
      }
      gpu_ops_.push_back(op);
      return;
    }
    case EventClass::kApi: {
      if (!f.correlation) return;  // nothing to join it with
      ApiCall a;
      a.name = intern(f.name);
      a.correlation = *f.correlation;
      a.external_id = f.external_id.value_or(0);
      if (f.ts) {
        a.start_ns = *f.ts;
        if (f.dur) a.end_ns = *f.ts + *f.dur;
      }
      a.pid = f.pid.value_or(0);
      a.tid = f.tid.value_or(0);
      apis_.push_back(a);
      return;
    }
    case EventClass::kSync: {
      SyncEvent s;
      s.kind = intern(f.sync_kind.empty() ? f.name : f.sync_kind);
      s.correlation = f.correlation.value_or(0);
      s.device = f.device.value_or(f.pid.value_or(0));
      if (s.device < 0 || s.device > std::numeric_limits<int>::max()) s.device = 0;
      s.stream = f.stream.value_or(-1);
      s.wait_on_stream = f.wait_on_stream.value_or(-1);
      s.wait_record_corr = f.wait_record_corr.value_or(-1);
      s.wait_event_id = f.wait_event_id.value_or(-1);
      if (f.ts) {
        s.start_ns = *f.ts;
        if (f.dur) s.end_ns = *f.ts + *f.dur;
      }
      syncs_.push_back(s);
      return;
    }
    case EventClass::kCpuOp: {
      if (!options_.keep_cpu_ops || !complete) return;
      CpuOp op;
      op.external_id = f.external_id.value_or(0);
      op.record_function_id = f.record_function_id.value_or(-1);
      op.name = std::string(f.name);
      op.pid = f.pid.value_or(0);
      op.thread_id = f.tid.value_or(0);
      if (f.ts) {
        op.start_ns = *f.ts;
        if (f.dur) op.end_ns = *f.ts + *f.dur;
      }
      if (!f.input_dims.empty() || !f.input_types.empty()) shareInputs(f, op);
      result_.cpu_ops.push_back(std::move(op));
      return;
    }
    case EventClass::kScope: {
      // nn.Module forward calls and record_function / user annotations: ranges on the thread that issued the
      // CPU ops inside them, kept as NVTX-like ranges (domain "nn.Module" or "user_annotation").
      if (!options_.keep_cpu_ops || !complete || !f.ts || !f.dur) return;
      core::NvtxRange r;
      const bool module = iequals(f.cat, "python_function");
      r.domain = module ? "nn.Module" : "user_annotation";
      r.name = std::string(module ? f.name.substr(kModulePrefix.size()) : f.name);
      r.thread_id = f.tid.value_or(0);
      r.start_ns = *f.ts;
      r.end_ns = *f.ts + *f.dur;
      scopes_.push_back(std::move(r));
      return;
    }
    case EventClass::kMemory: {
      if (!f.addr || !f.mem_bytes || !f.ts) {
        problems_.add(core::StatId::kKinetoMemoryEventIncomplete);
        return;
      }
      // c10::DeviceType: 0 CPU, 1 CUDA; ROCm builds report CUDA too. HIP (6) is accepted as well.
      const int64_t type = f.device_type.value_or(1);
      if (type != 1 && type != 6) {
        problems_.add(core::StatId::kKinetoMemoryEventNotGpu);
        return;
      }
      MemoryEvent m;
      m.ts_ns = *f.ts;
      m.addr = *f.addr;
      m.bytes = *f.mem_bytes;
      m.device = f.device_id.value_or(0);
      if (m.device < 0 || m.device > std::numeric_limits<int>::max()) m.device = 0;
      m.order = order_;
      memory_.push_back(m);
      return;
    }
    default: return;
  }
}

// Training and inference loops repeat the same shapes: one shared copy per distinct description.
void KinetoParse::shareInputs(const Fields& f, CpuOp& op) {
  std::string& key = inputs_key_;
  key.clear();
  for (const auto& dims : f.input_dims) {
    key.push_back('[');
    for (int64_t d : dims) key.append(reinterpret_cast<const char*>(&d), sizeof d);
    key.push_back(']');
  }
  key.push_back('|');
  for (std::string_view t : f.input_types) {
    key.append(t);
    key.push_back('\0');
  }
  auto it = inputs_.find(key);
  if (it == inputs_.end()) {
    SharedInputs in{SharedVector<std::vector<int64_t>>(f.input_dims),
                    SharedVector<std::string>(std::vector<std::string>(f.input_types.begin(), f.input_types.end()))};
    it = inputs_.emplace(key, std::move(in)).first;
  }
  op.input_dims = it->second.dims;
  op.input_types = it->second.types;
}

// Names, categories and kinds repeat: one copy each, alive until the import ends (the parser's own string
// buffer is overwritten by the next batch).
std::string_view KinetoParse::intern(std::string_view s) {
  if (s.empty()) return {};
  auto it = strings_.find(s);
  if (it == strings_.end()) it = strings_.emplace(s).first;
  return *it;
}

}  // namespace kfuse::analyzer::detail::kineto
