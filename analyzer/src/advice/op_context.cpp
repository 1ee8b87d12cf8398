// Operator and module context: one sweep per thread over CPU-op, module and annotation spans.
#include "advice/op_context.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace kfuse::analyzer {

namespace {

enum class RangeKind : uint8_t { kOp, kModule, kAnnotation };

struct Range {
  int64_t start = 0, end = 0;
  RangeKind kind = RangeKind::kOp;
  uint32_t index = 0;  // into cpu_ops or nvtx_ranges
};

struct Query {
  int64_t time = 0;
  uint32_t slot = 0;  // into the answers vector
};

struct Answer {
  const CpuOp* op = nullptr;
  const CpuOp* top = nullptr;
  int32_t module = -1;
  int32_t annotation = -1;
};

struct Thread {
  std::vector<Range> ranges;
  std::vector<Query> queries;
};

}  // namespace

const OpContext* OpContextTable::find(OpKind kind, core::Id id) const {
  const std::vector<OpContext>& v = kind == OpKind::kKernel ? launches_ : kind == OpKind::kMemcpy ? memcpys_ : memsets_;
  if (id <= 0 || static_cast<size_t>(id) > v.size()) return nullptr;
  const OpContext& c = v[static_cast<size_t>(id - 1)];
  return c.op || c.module >= 0 || c.annotation >= 0 ? &c : nullptr;
}

OpContextTable OpContextTable::build(const ImportResult& in) {
  OpContextTable table;
  const core::Trace& t = in.trace;
  if (in.cpu_ops.empty() && t.nvtx_ranges.empty()) return table;

  std::unordered_map<int64_t, const CpuOp*> by_external;
  by_external.reserve(in.cpu_ops.size());
  for (const CpuOp& op : in.cpu_ops) {
    if (op.external_id != 0) by_external.emplace(op.external_id, &op);
  }

  std::unordered_map<int64_t, Thread> threads;
  for (size_t i = 0; i < in.cpu_ops.size(); ++i) {
    const CpuOp& op = in.cpu_ops[i];
    if (op.start_ns == core::kNoTime || op.end_ns == core::kNoTime) continue;
    threads[op.thread_id].ranges.push_back(Range{op.start_ns, op.end_ns, RangeKind::kOp, static_cast<uint32_t>(i)});
  }
  for (size_t i = 0; i < t.nvtx_ranges.size(); ++i) {
    const core::NvtxRange& r = t.nvtx_ranges[i];
    if (r.start_ns == core::kNoTime || r.end_ns == core::kNoTime) continue;
    threads[r.thread_id].ranges.push_back(Range{r.start_ns, r.end_ns,
                                                r.domain == "nn.Module" ? RangeKind::kModule : RangeKind::kAnnotation,
                                                static_cast<uint32_t>(i)});
  }

  // Two questions per record: around its launch call (on the calling thread), and around the operator its External
  // id names (on that operator's thread). Slots: 2 * record number + 0 / 1.
  struct Record {
    OpKind kind;
    core::Id id;
    int64_t thread, api_ns;
    const CpuOp* by_id;
  };
  std::vector<Record> records;
  records.reserve(t.launches.size() + t.memcpys.size() + t.memsets.size());
  auto external = [&](const std::map<core::Id, int64_t>& ids, core::Id id) -> const CpuOp* {
    auto e = ids.find(id);
    if (e == ids.end()) return nullptr;
    auto o = by_external.find(e->second);
    return o == by_external.end() ? nullptr : o->second;
  };
  for (const core::Launch& l : t.launches) {
    records.push_back({OpKind::kKernel, l.id, l.thread_id, l.api_start_ns, external(in.launch_external_ids, l.id)});
  }
  for (const core::Memcpy& m : t.memcpys) {
    records.push_back({OpKind::kMemcpy, m.id, m.thread_id, m.api_start_ns, external(in.memcpy_external_ids, m.id)});
  }
  for (const core::Memset& m : t.memsets) {
    records.push_back({OpKind::kMemset, m.id, m.thread_id, m.api_start_ns, external(in.memset_external_ids, m.id)});
  }
  std::vector<Answer> answers(records.size() * 2);
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.api_ns != core::kNoTime) {
      auto it = threads.find(r.thread);
      if (it != threads.end()) it->second.queries.push_back(Query{r.api_ns, static_cast<uint32_t>(2 * i)});
    }
    if (r.by_id && r.by_id->start_ns != core::kNoTime) {
      auto it = threads.find(r.by_id->thread_id);
      if (it != threads.end()) it->second.queries.push_back(Query{r.by_id->start_ns, static_cast<uint32_t>(2 * i + 1)});
    }
  }

  // Module paths: one per module range, built from its parent's when it is pushed.
  std::vector<int32_t> module_of_range(t.nvtx_ranges.size(), -1);
  std::vector<int32_t> annotation_of_range(t.nvtx_ranges.size(), -1);
  for (auto& [tid, th] : threads) {
    if (th.queries.empty()) continue;
    std::sort(th.ranges.begin(), th.ranges.end(), [](const Range& a, const Range& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.end != b.end) return a.end > b.end;
      return a.kind < b.kind;  // a module around an op starting with it: the module outside
    });
    std::sort(th.queries.begin(), th.queries.end(), [](const Query& a, const Query& b) { return a.time < b.time; });
    std::vector<const Range*> stack;
    size_t next = 0;
    auto innermost = [&](RangeKind k) -> const Range* {
      for (size_t i = stack.size(); i-- > 0;) {
        if (stack[i]->kind == k) return stack[i];
      }
      return nullptr;
    };
    for (const Query& q : th.queries) {
      while (next < th.ranges.size() && th.ranges[next].start <= q.time) {
        const Range& r = th.ranges[next++];
        while (!stack.empty() && stack.back()->end <= r.start) stack.pop_back();
        if (r.kind == RangeKind::kModule && module_of_range[r.index] < 0) {
          const Range* parent = innermost(RangeKind::kModule);
          const std::string& name = t.nvtx_ranges[r.index].name;
          module_of_range[r.index] = static_cast<int32_t>(table.module_paths_.size());
          table.module_paths_.push_back(
              parent ? table.module_paths_[static_cast<size_t>(module_of_range[parent->index])] + "." + name : name);
        } else if (r.kind == RangeKind::kAnnotation && annotation_of_range[r.index] < 0) {
          annotation_of_range[r.index] = static_cast<int32_t>(table.annotations_.size());
          table.annotations_.push_back(t.nvtx_ranges[r.index].name);
        }
        stack.push_back(&r);
      }
      while (!stack.empty() && stack.back()->end <= q.time) stack.pop_back();
      // Ranges below the top may have ended too when spans are not perfectly nested: skip those.
      Answer& a = answers[q.slot];
      for (const Range* r : stack) {
        if (r->end <= q.time) continue;
        if (r->kind == RangeKind::kOp) {
          const CpuOp* op = &in.cpu_ops[r->index];
          if (!a.top) a.top = op;
          a.op = op;
        } else if (r->kind == RangeKind::kModule) {
          a.module = module_of_range[r->index];
        } else {
          a.annotation = annotation_of_range[r->index];
        }
      }
    }
  }

  table.launches_.resize(t.launches.size());
  table.memcpys_.resize(t.memcpys.size());
  table.memsets_.resize(t.memsets.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const Answer& by_call = answers[2 * i];
    const Answer& by_id = answers[2 * i + 1];
    OpContext c;
    if (by_call.op) {
      c = OpContext{by_call.op, by_call.top, by_call.module, by_call.annotation};
      if (r.by_id && r.by_id != by_call.op) ++table.mismatches_;
    } else if (r.by_id) {
      // The launch call was dropped (or lies outside any operator): the External id's operator, with what
      // surrounds it.
      c = OpContext{r.by_id, by_id.top ? by_id.top : r.by_id, by_id.module, by_id.annotation};
    } else {
      c = OpContext{nullptr, nullptr, by_call.module, by_call.annotation};
    }
    std::vector<OpContext>& v = r.kind == OpKind::kKernel   ? table.launches_
                                : r.kind == OpKind::kMemcpy ? table.memcpys_
                                                            : table.memsets_;
    if (r.id >= 1 && static_cast<size_t>(r.id) <= v.size()) v[static_cast<size_t>(r.id - 1)] = c;
    ++table.records_;
    table.linked_ += c.op ? 1 : 0;
    table.with_module_ += c.module >= 0 ? 1 : 0;
    table.with_annotation_ += c.annotation >= 0 ? 1 : 0;
  }
  return table;
}

std::string modulePattern(std::string_view path) {
  std::string out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t dot = path.find('.', i);
    if (dot == std::string_view::npos) dot = path.size();
    std::string_view part = path.substr(i, dot - i);
    // "Linear_12" -> "Linear"
    size_t u = part.rfind('_');
    if (u != std::string_view::npos && u + 1 < part.size() &&
        std::all_of(part.begin() + static_cast<std::ptrdiff_t>(u + 1), part.end(),
                    [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; })) {
      part = part.substr(0, u);
    }
    if (!out.empty()) out += '.';
    out += part;
    i = dot + 1;
  }
  return out;
}

std::string commonModulePath(const std::vector<std::string_view>& paths) {
  if (paths.empty()) return {};
  std::string_view common = paths.front();
  for (std::string_view p : paths) {
    size_t n = 0;
    while (n < common.size() && n < p.size() && common[n] == p[n]) ++n;
    // Cut back to a component boundary.
    const bool boundary = (n == common.size() || common[n] == '.') && (n == p.size() || p[n] == '.');
    if (!boundary) {
      while (n > 0 && common[n - 1] != '.') --n;
      if (n > 0) --n;  // drop the '.'
    }
    common = common.substr(0, n);
  }
  return std::string(common);
}

}  // namespace kfuse::analyzer
