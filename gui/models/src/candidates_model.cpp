#include "kfuse/gui/candidates_model.h"

#include <QColor>
#include <QLocale>

#include <algorithm>

#include "kfuse/gui/review_book.h"

namespace kfuse::gui {

using analyzer::Candidate;

QString candidateTitle(const Candidate& c) {
  QStringList names;
  for (const std::string& n : c.names) names << QString::fromStdString(analyzer::shortKernelName(n, 40));
  return names.join(c.kind == analyzer::CandidateKind::kVertical ? QStringLiteral(" → ") : QStringLiteral(" + "));
}

QString candidateMembers(const Candidate& c) {
  // The report's own phrase, with the arrow the table uses elsewhere.
  return QString::fromStdString(analyzer::candidateMembersText(c, /*short_names=*/true))
      .replace(QStringLiteral(" -> "), QStringLiteral(" → "));
}

namespace {

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

QString us(double ns) {
  return QString::number(ns / 1000.0, 'f', ns < 10'000 ? 2 : 1);
}

int confidenceLevel(analyzer::Confidence c) {
  switch (c) {
    case analyzer::Confidence::kHigh: return 2;
    case analyzer::Confidence::kMedium: return 1;
    case analyzer::Confidence::kLow: return 0;
  }
  return 0;
}

int legalityLevel(analyzer::Legality l) {
  switch (l) {
    case analyzer::Legality::kProven: return 2;
    case analyzer::Legality::kLikely: return 1;
    case analyzer::Legality::kBlocked: return 0;
  }
  return 0;
}

// The last two parts of a module path ("BertLayer.BertOutput"): the report names instances the same way.
QString moduleTail(const std::string& path) {
  const QStringList parts = q(path).split('.');
  return parts.size() <= 2 ? parts.join('.') : parts.mid(parts.size() - 2).join('.');
}

// One line per member: its operator label, family and kernel name.
QVariant membersTooltip(const Candidate& c) {
  QStringList lines;
  for (size_t i = 0; i < c.names.size(); ++i) {
    const analyzer::MemberContext* m = i < c.members.size() ? &c.members[i] : nullptr;
    QString line = QString("%1. ").arg(i + 1);
    if (m && !m->op.empty()) line += q(m->label) + " — ";
    if (m && !m->family.empty()) line += "[" + q(m->family) + "] ";
    lines << line + q(c.names[i]);
  }
  const std::string where = analyzer::candidateWhereText(c);
  if (!where.empty()) lines << q(where);
  return lines.join('\n');
}

QVariant modulesTooltip(const Candidate& c) {
  if (c.modules.empty()) return {};
  QStringList lines = {q(analyzer::candidateWhereText(c))};
  for (const analyzer::ModuleOccurrences& m : c.modules) {
    lines << QString("%1 ×%2")
                 .arg(m.module.empty() ? QStringLiteral("(outside any module)") : q(m.module))
                 .arg(m.occurrences);
  }
  return lines.join('\n');
}

QVariant remediesTooltip(const Candidate& c) {
  if (c.remedies.empty()) return {};
  QStringList lines;
  for (const analyzer::Remedy& r : c.remedies) lines << q(r.kind) + ": " + q(r.text);
  return lines.join("\n\n");
}

}  // namespace

const std::vector<CandidateColumn>& candidateColumns() {
  static const std::vector<CandidateColumn> columns = {
      {"Rank",
       [](const Candidate& c) { return c.rank; },
       {},
       "The analyzer's rank (best first, blocked last)",
       {},
       /*numeric=*/true},
      {"Kind",
       [](const Candidate& c) { return QString(analyzer::fusionKindName(c.fusion)); },
       {},
       "How the kernels share the fused launch (kfuse analyze's kind). thread-local: each thread runs every kernel; "
       "epilogue: element-wise consumers run per element after the producer's store; prologue: the element-wise "
       "producer is recomputed at each of the consumer's loads; block-level: each block runs the producer, a "
       "barrier, then the consumer; horizontal: side by side in one launch",
       {},
       false},
      {"Legality", [](const Candidate& c) { return QString(analyzer::legalityName(c.legality)); },
       [](const Candidate& c) { return legalityLevel(c.legality); }, "proven / likely / blocked",
       [](const Candidate& c) { return q(analyzer::candidateVerdictText(c)); }, false},
      {"Saving/occ (µs)",
       [](const Candidate& c) { return us(c.cost.saving_ns); },
       [](const Candidate& c) { return c.cost.saving_ns; },
       "Predicted saving per occurrence",
       {},
       true},
      {"Operators / kernels",
       [](const Candidate& c) { return candidateMembers(c); },
       {},
       "The members in launch order: the PyTorch operators (dtype and shape) that launched them where the trace "
       "says, else the kernel names",
       membersTooltip,
       false},
      {"Module", [](const Candidate& c) { return moduleTail(c.module_pattern); },
       [](const Candidate& c) { return q(c.module_pattern); },
       "The nn.Module the members run in (instance numbers dropped), or empty outside any module", modulesTooltip,
       false},
      {"Total saving (µs)",
       [](const Candidate& c) { return us(c.total_saving_ns); },
       [](const Candidate& c) { return c.total_saving_ns; },
       "Predicted saving over the whole trace",
       {},
       true},
      {"Confidence",
       [](const Candidate& c) { return QString(analyzer::confidenceName(c.confidence)); },
       [](const Candidate& c) { return confidenceLevel(c.confidence); },
       "How much data the verdict rests on",
       {},
       false},
      {"Occurrences",
       [](const Candidate& c) { return static_cast<qulonglong>(c.occurrences.size()); },
       {},
       "How often the pattern occurs in the trace",
       {},
       true},
      {"GPU busy %",
       [](const Candidate& c) { return QString::number(100.0 * c.share_of_gpu_busy, 'f', 2); },
       [](const Candidate& c) { return c.share_of_gpu_busy; },
       "Total saving as a share of GPU busy time",
       {},
       true},
      {"Instances",
       [](const Candidate& c) { return static_cast<qulonglong>(c.modules.size()); },
       {},
       "Module instances the occurrences are spread over (the tooltip lists the occurrences per instance)",
       modulesTooltip,
       true},
      {"Remedies",
       [](const Candidate& c) {
         QStringList kinds;
         for (const analyzer::Remedy& r : c.remedies) kinds << q(r.kind);
         return kinds.join(", ");
       },
       {},
       "What to do about it, best first (the tooltip has the advice in full, as kfuse analyze prints it)",
       remediesTooltip,
       false},
      {"Critical path",
       [](const Candidate& c) { return c.on_critical_path ? QString("yes") : QString(); },
       [](const Candidate& c) { return c.on_critical_path ? 1 : 0; },
       "On the trace's critical path",
       {},
       false},
      {"Direction",
       [](const Candidate& c) { return QString(analyzer::candidateKindName(c.kind)); },
       {},
       "vertical: a producer-consumer chain; horizontal: independent kernels launched as one",
       {},
       false},
  };
  return columns;
}

int candidateColumn(const QString& header) {
  const std::vector<CandidateColumn>& columns = candidateColumns();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].header == header) return static_cast<int>(i);
  }
  return -1;
}

CandidatesModel::CandidatesModel(QObject* parent) : QAbstractTableModel(parent) {}

void CandidatesModel::setSession(std::shared_ptr<const Session> session) {
  beginResetModel();
  session_ = std::move(session);
  report_ = session_ ? session_->report : analyzer::Report{};
  decisions_.clear();
  accepted_.clear();
  endResetModel();
}

void CandidatesModel::setReport(const analyzer::Report& report) {
  if (!session_ || report.candidates.size() != report_.candidates.size()) return;
  report_ = report;
  if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

void CandidatesModel::setDecisions(const std::map<std::string, core::ReviewDecision>& decisions) {
  decisions_ = decisions;
  accepted_ = session_ ? acceptedCandidates(*session_, decisions_) : std::vector<int>{};
  if (rowCount() > 0) emit dataChanged(index(0, reviewColumn()), index(rowCount() - 1, conflictColumn()));
}

int CandidatesModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !session_) return 0;
  return static_cast<int>(report_.candidates.size());
}

int CandidatesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(candidateColumns().size()) + 2;
}

QVariant CandidatesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !session_ || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const Candidate& c = report_.candidates[static_cast<size_t>(index.row())];
  if (role == CandidateIndexRole) return index.row();
  if (index.column() == reviewColumn()) {
    const std::string& key = session_->candidate_keys[static_cast<size_t>(index.row())];
    auto it = decisions_.find(key);
    if (role == Qt::DisplayRole || role == SortRole || role == ReviewRole) {
      if (it == decisions_.end()) return role == ReviewRole ? QVariant() : QVariant(QString());
      return QString(core::reviewVerdictName(it->second.verdict));
    }
    if (role == Qt::ToolTipRole && it != decisions_.end()) return QString::fromStdString(it->second.note);
    return {};
  }
  if (index.column() == conflictColumn()) return conflictData(index.row(), role);
  const CandidateColumn& col = candidateColumns()[static_cast<size_t>(index.column())];
  switch (role) {
    case Qt::DisplayRole: return col.display(c);
    case SortRole: return col.sort ? col.sort(c) : col.display(c);
    case Qt::ToolTipRole:
      if (col.cell_tooltip) return col.cell_tooltip(c);
      return c.verdict.empty() ? QVariant() : QVariant(QString::fromStdString(c.verdict));
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(
          Qt::Alignment(col.numeric ? Qt::AlignRight | Qt::AlignVCenter : Qt::AlignLeft | Qt::AlignVCenter));
    default: return {};
  }
}

QVariant CandidatesModel::conflictData(int row, int role) const {
  const Candidate& c = report_.candidates[static_cast<size_t>(row)];
  const std::vector<int> against = conflictingCandidates(*session_, row, accepted_);
  auto accepted = [&](int rank) {
    return std::any_of(against.begin(), against.end(),
                       [&](int i) { return report_.candidates[static_cast<size_t>(i)].rank == rank; });
  };
  switch (role) {
    case Qt::DisplayRole: {
      QStringList ranks;
      for (int r : c.conflicts_with)
        ranks << QString("#%1").arg(r) + (accepted(r) ? QStringLiteral(" (accepted)") : "");
      return ranks.join(", ");
    }
    case SortRole: return static_cast<int>(against.size() * 1000 + c.conflicts_with.size());
    case ConflictRole: {
      QVariantList ranks;
      for (int i : against) ranks << report_.candidates[static_cast<size_t>(i)].rank;
      return ranks;
    }
    case Qt::ForegroundRole: return against.empty() ? QVariant() : QVariant(QColor(0xb0, 0x10, 0x10));
    case Qt::ToolTipRole: {
      QStringList lines;
      for (int r : c.conflicts_with) {
        for (const Candidate& other : report_.candidates) {
          if (other.rank != r) continue;
          lines << QString::fromStdString(analyzer::candidateConflictText(c, other)) +
                       (accepted(r) ? QString("; #%1 is accepted").arg(r) : QString());
        }
      }
      return lines.isEmpty() ? QVariant() : QVariant(lines.join('\n'));
    }
    default: return {};
  }
}

QVariant CandidatesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
  if (section == conflictColumn()) {
    if (role == Qt::DisplayRole) return QStringLiteral("Conflicts");
    if (role == Qt::ToolTipRole) {
      return QStringLiteral(
          "The candidates this one shares a launch with: only one of them can be applied (red: one "
          "of them is accepted)");
    }
    return {};
  }
  if (section == reviewColumn()) {
    if (role == Qt::DisplayRole) return QStringLiteral("Review");
    if (role == Qt::ToolTipRole) return QStringLiteral("Your decision (stored in the trace)");
    return {};
  }
  const CandidateColumn& col = candidateColumns()[static_cast<size_t>(section)];
  if (role == Qt::DisplayRole) return col.header;
  if (role == Qt::ToolTipRole) return col.tooltip;
  return {};
}

// ---------------------------------------------------------------------------------------------------------------

CandidateFilter::CandidateFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(CandidatesModel::SortRole);
  setDynamicSortFilter(true);
}

void CandidateFilter::setKinds(std::set<analyzer::CandidateKind> kinds) {
  kinds_ = std::move(kinds);
  invalidateFilter();
}
void CandidateFilter::setLegalities(std::set<analyzer::Legality> legalities) {
  legalities_ = std::move(legalities);
  invalidateFilter();
}
void CandidateFilter::setMinConfidence(analyzer::Confidence c) {
  min_confidence_ = c;
  invalidateFilter();
}
void CandidateFilter::setMinTotalSavingUs(double v) {
  min_saving_us_ = v;
  invalidateFilter();
}
void CandidateFilter::setMinOccurrences(int n) {
  min_occurrences_ = n;
  invalidateFilter();
}
void CandidateFilter::setNameFilter(const QString& text) {
  name_ = text;
  invalidateFilter();
}

bool CandidateFilter::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  if (source_parent.isValid()) return false;
  const auto* model = qobject_cast<const CandidatesModel*>(sourceModel());
  if (!model || !model->report()) return true;
  const auto& candidates = model->report()->candidates;
  if (source_row < 0 || static_cast<size_t>(source_row) >= candidates.size()) return false;
  const Candidate& c = candidates[static_cast<size_t>(source_row)];
  if (!kinds_.empty() && !kinds_.count(c.kind)) return false;
  if (!legalities_.empty() && !legalities_.count(c.legality)) return false;
  if (confidenceLevel(c.confidence) < confidenceLevel(min_confidence_)) return false;
  if (c.total_saving_ns / 1000.0 < min_saving_us_) return false;
  if (static_cast<int>(c.occurrences.size()) < min_occurrences_) return false;
  if (!name_.isEmpty()) {
    bool any = false;
    for (const std::string& n : c.names) {
      if (QString::fromStdString(n).contains(name_, Qt::CaseInsensitive)) any = true;
    }
    for (const std::string& n : c.mangled_names) {
      if (QString::fromStdString(n).contains(name_, Qt::CaseInsensitive)) any = true;
    }
    for (const analyzer::MemberContext& m : c.members) {
      if (QString::fromStdString(m.label).contains(name_, Qt::CaseInsensitive) ||
          QString::fromStdString(m.module).contains(name_, Qt::CaseInsensitive))
        any = true;
    }
    if (QString::fromStdString(c.module_pattern).contains(name_, Qt::CaseInsensitive)) any = true;
    if (!any) return false;
  }
  return true;
}

}  // namespace kfuse::gui
