// ptxas -v reports and the occupancy calculator. The report format read here is that of ptxas 12.x and 13.0:
//
//   ptxas info    : Compiling entry function '_Z5scalePfPKfi' for 'sm_80'
//   ptxas info    : Function properties for _Z5scalePfPKfi
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]
//
// ("N bytes cumulative stack size" joins the last line when the entry calls functions or has a stack frame;
// cmem is printed for sm_8x only). A .func gets a "Function properties" block without a "Compiling" line.
#include "kfuse/rewriter/resources.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "kfuse/core/gpu_spec.h"
#include "kfuse/ptx/ptxas.h"

namespace kfuse::rewriter {
namespace {

constexpr int kWarpSize = 32;

uint64_t roundUp(uint64_t x, uint64_t unit) {
  return unit == 0 ? x : (x + unit - 1) / unit * unit;
}

// The text between the first pair of single quotes after `from`, or "".
std::string quoted(const std::string& line, size_t from = 0) {
  const size_t a = line.find('\'', from);
  if (a == std::string::npos) return "";
  const size_t b = line.find('\'', a + 1);
  return b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

// "  824 bytes stack frame" -> 824 with rest "bytes stack frame"; false when the item does not start with a number.
bool leadingNumber(std::string_view item, uint64_t& value, std::string_view& rest) {
  while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
  for (std::string_view word : {"Used ", "used "}) {
    if (item.substr(0, word.size()) == word) item.remove_prefix(word.size());
  }
  const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (ec != std::errc()) return false;
  rest = item.substr(static_cast<size_t>(end - item.data()));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return true;
}

// Calls `f(value, unit)` for each comma-separated "N unit" item of `text`.
template <typename F>
void forEachItem(std::string_view text, F&& f) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    uint64_t value = 0;
    std::string_view unit;
    if (leadingNumber(item, value, unit)) f(value, unit);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
}

std::string knownArchs() {
  std::string out;
  for (const core::SmLimits& l : core::smLimitsTable()) {
    out += (out.empty() ? "" : ", ") + std::string("sm_") + std::to_string(l.cc_major) + std::to_string(l.cc_minor);
  }
  return out;
}

}  // namespace

Expected<ArchLimits> archLimits(std::string_view arch) {
  std::string_view digits = arch;
  if (digits.substr(0, 3) == "sm_") digits.remove_prefix(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  const bool numeric = digits.size() >= 2 && digits.size() <= 3 &&
                       std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  const core::SmLimits* l = nullptr;
  if (arch.substr(0, 3) == "sm_" && numeric) {
    // The last digit is the minor version: sm_90 = 9.0, sm_103 = 10.3.
    const int major = std::stoi(std::string(digits.substr(0, digits.size() - 1)));
    l = core::findSmLimits(major, digits.back() - '0');
  }
  if (l == nullptr) {
    return invalidArgument("unknown architecture '" + std::string(arch) + "' (known: " + knownArchs() + ")");
  }
  ArchLimits out;
  out.arch = std::string(arch);
  out.max_warps_per_sm = l->max_warps_per_sm;
  out.max_blocks_per_sm = l->max_blocks_per_sm;
  out.registers_per_sm = l->registers_per_sm;
  out.register_allocation_unit = l->register_allocation_unit;
  out.max_registers_per_thread = l->max_registers_per_thread;
  out.shared_per_sm = l->max_shared_per_sm;
  out.max_shared_per_block = l->max_shared_per_block_optin;
  out.reserved_shared_per_block = l->reserved_shared_per_block;
  out.max_threads_per_block = l->max_threads_per_block;
  out.register_file_partitions = l->register_file_partitions;
  out.shared_allocation_unit = l->shared_allocation_unit;
  out.barriers_per_sm = l->barriers_per_sm;
  return out;
}

Expected<std::vector<KernelResources>> compileResources(std::string_view ptx, const std::string& arch) {
  auto report = ptx::runPtxas(ptx, arch);
  if (!report.ok()) return report.status();
  if (report->exit_code != 0) {
    return badFormat("ptxas" + (arch.empty() ? std::string() : " -arch=" + arch) + " rejected the PTX (exit code " +
                     std::to_string(report->exit_code) + "):\n" + report->log);
  }
  return parsePtxasLog(report->log, arch);
}

Expected<std::vector<KernelResources>> parsePtxasLog(std::string_view log, const std::string& arch) {
  std::vector<KernelResources> out;
  std::vector<bool> used_seen;
  // Which function the next "N bytes stack frame" line belongs to: the entry being compiled, or none (a .func).
  bool properties_of_entry = false;
  uint64_t stack_frame = 0;
  std::istringstream lines{std::string(log)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("Compiling entry function '") != std::string::npos) {
      KernelResources r;
      r.kernel = quoted(line);
      const size_t for_pos = line.find(" for '");
      r.arch = for_pos == std::string::npos ? arch : quoted(line, for_pos);
      out.push_back(std::move(r));
      used_seen.push_back(false);
      properties_of_entry = false;
    } else if (const size_t p = line.find("Function properties for "); p != std::string::npos) {
      std::string name = line.substr(p + std::string_view("Function properties for ").size());
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
      properties_of_entry = !out.empty() && !used_seen.back() && out.back().kernel == name;
    } else if (line.find("bytes stack frame") != std::string::npos) {
      if (!properties_of_entry) continue;
      KernelResources& r = out.back();
      forEachItem(line, [&](uint64_t value, std::string_view unit) {
        if (unit == "bytes stack frame") stack_frame = value;
        if (unit == "bytes spill stores") r.spill_store_bytes = value;
        if (unit == "bytes spill loads") r.spill_load_bytes = value;
      });
      r.stack_bytes = stack_frame;
    } else if (const size_t u = line.find(": Used "); u != std::string::npos) {
      if (out.empty() || used_seen.back()) continue;
      KernelResources& r = out.back();
      used_seen.back() = true;
      properties_of_entry = false;
      forEachItem(std::string_view(line).substr(u + 2), [&](uint64_t value, std::string_view unit) {
        if (unit == "registers") r.registers = static_cast<int>(value);
        if (unit == "barriers") r.barriers = static_cast<int>(value);
        if (unit == "bytes smem") r.static_shared_bytes = value;
        if (unit == "bytes cumulative stack size") r.stack_bytes = value;
      });
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!used_seen[i]) {
      return badFormat("ptxas reported no resource usage for entry '" + out[i].kernel + "':\n" + std::string(log));
    }
  }
  return out;
}

Status computeOccupancy(KernelResources& r, uint32_t threads_per_block, uint64_t dynamic_shared_bytes) {
  auto limits = archLimits(r.arch);
  if (!limits.ok()) return limits.status();
  const ArchLimits& l = *limits;
  if (threads_per_block == 0 || threads_per_block > static_cast<uint32_t>(l.max_threads_per_block)) {
    return invalidArgument("blocks of " + std::to_string(threads_per_block) + " threads cannot run on " + l.arch +
                           " (1 to " + std::to_string(l.max_threads_per_block) + ")");
  }
  r.threads_per_block = threads_per_block;
  const int warps_per_block = static_cast<int>((threads_per_block + kWarpSize - 1) / kWarpSize);

  // Blocks per SM each resource allows, in the order ties are broken.
  struct Limit {
    OccupancyLimiter name;
    int64_t blocks;
  };
  std::vector<Limit> by;
  by.push_back({OccupancyLimiter::kWarps, l.max_warps_per_sm / warps_per_block});
  by.push_back({OccupancyLimiter::kBlocks, l.max_blocks_per_sm});

  std::string cannot_run;  // why not even one block fits
  const int64_t regs_per_warp = static_cast<int64_t>(roundUp(
      static_cast<uint64_t>(std::max(0, r.registers)) * kWarpSize, static_cast<uint64_t>(l.register_allocation_unit)));
  // The hardware checks a block's registers as if its warps were spread over every partition evenly.
  const int64_t regs_per_block =
      regs_per_warp * static_cast<int64_t>(roundUp(static_cast<uint64_t>(warps_per_block),
                                                   static_cast<uint64_t>(l.register_file_partitions)));
  if (r.registers > l.max_registers_per_thread) {
    by.push_back({OccupancyLimiter::kRegisters, 0});
    cannot_run = std::to_string(r.registers) + " registers per thread exceed the maximum of " +
                 std::to_string(l.max_registers_per_thread);
  } else if (regs_per_block > l.registers_per_sm) {
    by.push_back({OccupancyLimiter::kRegisters, 0});
    cannot_run = "a block of " + std::to_string(threads_per_block) + " threads with " + std::to_string(r.registers) +
                 " registers each is allocated " + std::to_string(regs_per_block) + " registers; an SM has " +
                 std::to_string(l.registers_per_sm);
  } else if (regs_per_warp > 0) {
    const int64_t warps_per_partition = l.registers_per_sm / l.register_file_partitions / regs_per_warp;
    by.push_back({OccupancyLimiter::kRegisters, warps_per_partition * l.register_file_partitions / warps_per_block});
  }

  const uint64_t shared_per_block =
      roundUp(r.static_shared_bytes + dynamic_shared_bytes + l.reserved_shared_per_block, l.shared_allocation_unit);
  if (shared_per_block > l.max_shared_per_block + l.reserved_shared_per_block) {
    by.push_back({OccupancyLimiter::kSharedMemory, 0});
    if (cannot_run.empty()) {
      cannot_run = std::to_string(r.static_shared_bytes) + " bytes of static and " +
                   std::to_string(dynamic_shared_bytes) + " bytes of dynamic shared memory exceed the " +
                   std::to_string(l.max_shared_per_block) + " bytes a block may have";
    }
  } else if (shared_per_block > 0) {
    by.push_back({OccupancyLimiter::kSharedMemory, static_cast<int64_t>(l.shared_per_sm / shared_per_block)});
  }

  if (r.barriers > 0) by.push_back({OccupancyLimiter::kBarriers, l.barriers_per_sm / r.barriers});

  const Limit* least = &by.front();
  for (const Limit& x : by) {
    if (x.blocks < least->blocks) least = &x;
  }
  r.occupancy_limiter = least->name;
  r.occupancy = static_cast<double>(least->blocks * warps_per_block) / l.max_warps_per_sm;
  if (least->blocks == 0) {
    r.occupancy = 0;
    return invalidArgument("'" + r.kernel + "' cannot run on " + l.arch + ": " +
                           (cannot_run.empty() ? std::string("no block fits on an SM") : cannot_run));
  }
  return Status();
}

}  // namespace kfuse::rewriter
