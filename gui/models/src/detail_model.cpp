#include "kfuse/gui/detail_model.h"

#include <algorithm>
#include <map>

namespace kfuse::gui {

namespace {

QString q(const std::string& s) {
  return QString::fromStdString(s);
}
QString ns(double v) {
  if (v >= 1e6) return QString::number(v / 1e6, 'f', 3) + " ms";
  if (v >= 1e3) return QString::number(v / 1e3, 'f', 2) + " µs";
  return QString::number(v, 'f', 0) + " ns";
}
QString bytes(double b) {
  if (b <= 0) return QStringLiteral("unknown");
  if (b >= 1 << 30) return QString::number(b / (1 << 30), 'f', 2) + " GiB";
  if (b >= 1 << 20) return QString::number(b / (1 << 20), 'f', 2) + " MiB";
  if (b >= 1 << 10) return QString::number(b / (1 << 10), 'f', 1) + " KiB";
  return QString::number(b, 'f', 0) + " B";
}
QString dim(const core::Dim3& d) {
  return QString("(%1, %2, %3)").arg(d.x).arg(d.y).arg(d.z);
}

void addLaunchRows(DetailNode& n, const core::Launch& l) {
  n.add("grid", dim(l.grid));
  n.add("block", dim(l.block));
  if (l.cluster.count() > 1) n.add("cluster", dim(l.cluster));
  n.add("registers / thread", l.registers_per_thread ? QString::number(l.registers_per_thread) : "unknown");
  n.add("shared memory", QString("%1 B static, %2 B dynamic").arg(l.static_shared_bytes).arg(l.dynamic_shared_bytes));
  if (l.gpuDurationNs() != core::kNoTime) n.add("GPU time", ns(static_cast<double>(l.gpuDurationNs())));
  if (!l.pointer_args.empty()) {
    DetailNode& p = n.add("pointer arguments", QString::number(l.pointer_args.size()));
    for (const core::PointerArg& a : l.pointer_args) {
      p.add(a.field_offset < 0 ? QString("param %1").arg(a.param_index)
                               : QString("param %1, bytes %2-%3 (inside a struct)")
                                     .arg(a.param_index)
                                     .arg(a.field_offset)
                                     .arg(a.field_offset + 7),
            a.allocation_id == core::kNoId ? QString("0x%1 (no known allocation)").arg(a.address, 0, 16)
                                           : QString("allocation %1 + %2").arg(a.allocation_id).arg(a.offset));
    }
  }
}

// What a PyTorch user knows the candidate by: the report's own phrases (analyzer::candidateMembersText,
// candidateWhereText), the module instances and the remedies. Nothing when the trace carries no such context.
void addContext(DetailNode& root, const analyzer::Candidate& c) {
  const bool ops =
      std::any_of(c.members.begin(), c.members.end(), [](const analyzer::MemberContext& m) { return !m.op.empty(); });
  const std::string where = analyzer::candidateWhereText(c);
  if (ops || !where.empty() || !c.fusion_kind.empty() || !c.modules.empty()) {
    const QString members = q(analyzer::candidateMembersText(c));
    DetailNode& context = root.add("PyTorch context", ops ? members : QString(), members);
    if (!c.fusion_kind.empty()) context.add("fusion", q(c.fusion_kind + " fusion"));
    if (!where.empty()) context.add("where", q(where), q(where));
    if (!c.module_pattern.empty()) context.add("module pattern", q(c.module_pattern), q(c.module_pattern));
    if (!c.data_flow.empty()) context.add("data flow from", q(c.data_flow));
    if (c.in_cuda_graph) context.add("CUDA graph", "the kernels ran as nodes of a CUDA graph replay");
    if (!c.modules.empty()) {
      DetailNode& instances = context.add("module instances", QString::number(c.modules.size()));
      for (const analyzer::ModuleOccurrences& m : c.modules) {
        // Named by the last two parts of its path, as the report names instances; the whole path as the tooltip.
        const QStringList parts = q(m.module).split('.');
        const QString name = m.module.empty()    ? QStringLiteral("(outside any module)")
                             : parts.size() <= 2 ? q(m.module)
                                                 : parts.mid(parts.size() - 2).join('.');
        instances.add(name, QString("%1 occurrence%2").arg(m.occurrences).arg(m.occurrences == 1 ? "" : "s"),
                      q(m.module));
      }
    }
  }
  if (!c.remedies.empty()) {
    DetailNode& remedies = root.add("Remedies", QString::number(c.remedies.size()));
    for (const analyzer::Remedy& r : c.remedies) remedies.add(q(r.kind), q(r.text), q(r.text));
  }
}

void addMemberContext(DetailNode& m, const std::string& kernel, const analyzer::MemberContext& context) {
  if (!context.op.empty()) {
    m.add("kernel", q(analyzer::shortKernelName(kernel, 60)), q(kernel));
    m.add("operator", q(context.op));
  }
  if (!context.top_op.empty() && context.top_op != context.op) m.add("outermost operator", q(context.top_op));
  if (!context.module.empty()) m.add("module", q(context.module), q(context.module));
  if (!context.family.empty()) m.add("kernel family", q(context.family));
  if (!context.library.empty()) m.add("library", q(context.library));
  if (!context.annotation.empty()) m.add("annotation", q(context.annotation));
}

}  // namespace

DetailNode candidateDetail(const Session& session, const analyzer::Report& report, const analyzer::Candidate& c) {
  DetailNode root;
  const core::Trace& trace = session.input.trace;
  std::map<core::Id, const core::Launch*> launches;
  for (const core::Launch& l : trace.launches) launches[l.id] = &l;

  DetailNode& summary = root.add(QString("Candidate #%1").arg(c.rank), analyzer::candidateKindName(c.kind));
  summary.add("occurrences", QString::number(c.occurrences.size()));
  summary.add("on the critical path", c.on_critical_path ? "yes" : "no");

  addContext(root, c);

  DetailNode& members = root.add("Members", QString::number(c.names.size()));
  // A graph candidate's occurrences name graph nodes, not launches.
  const std::vector<core::Id>* first =
      c.occurrence_launches.empty() || c.inGraphs() ? nullptr : &c.occurrence_launches.front();
  for (size_t i = 0; i < c.names.size(); ++i) {
    const analyzer::MemberContext* context = i < c.members.size() ? &c.members[i] : nullptr;
    // Named by its operator where the trace says which one launched it (as the report names it).
    const std::string title =
        context && !context->op.empty() ? context->label : analyzer::shortKernelName(c.names[i], 60);
    DetailNode& m = members.add(QString("%1. %2").arg(i + 1).arg(q(title)), {}, q(c.names[i]));
    if (context) addMemberContext(m, c.names[i], *context);
    if (i < c.mangled_names.size() && !c.mangled_names[i].empty() && c.mangled_names[i] != c.names[i]) {
      m.add("mangled name", q(c.mangled_names[i]));
    }
    if (first && i < first->size()) {
      auto it = launches.find((*first)[i]);
      if (it != launches.end()) {
        m.value = QString("launch %1").arg(it->first);
        addLaunchRows(m, *it->second);
      }
    }
  }

  DetailNode& edges = root.add("Dependency edges", QString::number(c.edges.size()));
  for (const auto& [kind, why] : c.edges) edges.add(analyzer::edgeKindName(kind), q(why), q(why));

  DetailNode& legality = root.add("Legality", analyzer::legalityName(c.legality));
  const QString verdict = q(analyzer::candidateVerdictText(c));
  legality.add("verdict", verdict, verdict);
  legality.add("confidence", analyzer::confidenceName(c.confidence));
  if (!c.verdict.empty())
    legality.add(c.legality == analyzer::Legality::kBlocked ? "blocked by" : "decided by", q(c.verdict), q(c.verdict));
  for (const std::string& r : c.reasons) legality.add("reason", q(r), q(r));
  legality.add("occurrences checked", QString::number(c.checked.occurrences_checked));
  legality.add("distinct argument tuples", QString::number(c.checked.argument_tuples));

  DetailNode& cost = root.add(QString("Cost on %1").arg(q(report.gpu.short_name)), q(report.gpu.marketing_name));
  cost.add("measured (per occurrence)", ns(c.cost.measured_ns));
  cost.add("fused (predicted)", ns(c.cost.fused_ns));
  cost.add("idle gaps removed", ns(c.cost.gap_ns));
  cost.add("saving per occurrence", ns(c.cost.saving_ns));
  cost.add("total saving", ns(c.total_saving_ns));
  cost.add("share of GPU busy time", QString::number(100.0 * c.share_of_gpu_busy, 'f', 2) + " %");
  cost.add("DRAM bytes before", bytes(c.cost.bytes_before));
  cost.add("DRAM bytes after", bytes(c.cost.bytes_after));
  cost.add("bytes from", q(c.cost.bytes_source));
  cost.add("FLOP", c.cost.flops > 0 ? QString::number(c.cost.flops, 'g', 4) : "unknown");
  cost.add("FLOP from", q(c.cost.flops_source));
  if (!c.cost.note.empty()) cost.add("note", q(c.cost.note), q(c.cost.note));
  cost.add("cost model version", QString::number(report.cost_model_version));

  if (!c.conflicts_with.empty()) {
    DetailNode& conflicts = root.add("Conflicts with", QString::number(c.conflicts_with.size()));
    for (int r : c.conflicts_with) conflicts.add(QString("#%1").arg(r), "shares a launch");
  }
  return root;
}

DetailNode launchDetail(const Session& session, core::Id launch_id) {
  DetailNode root;
  for (const core::Launch& l : session.input.trace.launches) {
    if (l.id != launch_id) continue;
    std::string name;
    for (const core::KernelFunction& f : session.input.trace.functions) {
      if (f.id == l.function_id) name = f.demangled_name.empty() ? f.mangled_name : f.demangled_name;
    }
    DetailNode& n = root.add(QString("Launch %1").arg(l.id), q(analyzer::shortKernelName(name, 60)), q(name));
    // The PyTorch operator that launched it (a Kineto trace: the same External id).
    auto e = session.input.launch_external_ids.find(l.id);
    if (e != session.input.launch_external_ids.end() && e->second != 0) {
      for (const analyzer::CpuOp& op : session.input.cpu_ops) {
        if (op.external_id == e->second) n.add("operator", q(op.name));
      }
    }
    addLaunchRows(n, l);
    n.add("in a candidate", "no");
  }
  return root;
}

// ---------------------------------------------------------------------------------------------------------------

DetailModel::DetailModel(QObject* parent) : QAbstractItemModel(parent) {}

void DetailModel::indexSlots(const DetailNode& node, int parent_slot) {
  for (size_t i = 0; i < node.children.size(); ++i) {
    const int slot = static_cast<int>(slots_.size());
    slots_.push_back({&node.children[i], parent_slot, static_cast<int>(i)});
    child_slots_.emplace_back();
    if (parent_slot < 0)
      root_slots_.push_back(slot);
    else
      child_slots_[static_cast<size_t>(parent_slot)].push_back(slot);
    indexSlots(node.children[i], slot);
  }
}

void DetailModel::setTree(DetailNode root) {
  beginResetModel();
  root_ = std::move(root);
  slots_.clear();
  child_slots_.clear();
  root_slots_.clear();
  indexSlots(root_, -1);
  endResetModel();
}

const DetailModel::Slot* DetailModel::slotOf(const QModelIndex& index) const {
  if (!index.isValid()) return nullptr;
  const auto s = static_cast<size_t>(index.internalId());
  return s < slots_.size() ? &slots_[s] : nullptr;
}

QModelIndex DetailModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= 2) return {};
  const std::vector<int>* kids = &root_slots_;
  if (parent.isValid()) {
    if (parent.column() != 0) return {};
    kids = &child_slots_[static_cast<size_t>(parent.internalId())];
  }
  if (static_cast<size_t>(row) >= kids->size()) return {};
  return createIndex(row, column, static_cast<quintptr>((*kids)[static_cast<size_t>(row)]));
}

QModelIndex DetailModel::parent(const QModelIndex& child) const {
  const Slot* s = slotOf(child);
  if (!s || s->parent < 0) return {};
  const Slot& p = slots_[static_cast<size_t>(s->parent)];
  return createIndex(p.row, 0, static_cast<quintptr>(s->parent));
}

int DetailModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(root_slots_.size());
  if (parent.column() != 0) return 0;
  return static_cast<int>(child_slots_[static_cast<size_t>(parent.internalId())].size());
}

int DetailModel::columnCount(const QModelIndex&) const {
  return 2;
}

QVariant DetailModel::data(const QModelIndex& index, int role) const {
  const Slot* s = slotOf(index);
  if (!s) return {};
  if (role == Qt::DisplayRole) return index.column() == 0 ? s->node->key : s->node->value;
  if (role == Qt::ToolTipRole && !s->node->tooltip.isEmpty()) return s->node->tooltip;
  return {};
}

QVariant DetailModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == 0) return QStringLiteral("What");
  if (section == 1) return QStringLiteral("Value");
  return {};
}

}  // namespace kfuse::gui
