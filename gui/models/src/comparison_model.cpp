#include "kfuse/gui/comparison_model.h"

#include <limits>

#include "kfuse/core/trace_summary.h"

namespace kfuse::gui {
namespace {

// Below every recorded figure when sorting: times and differences the traces do not record.
constexpr qint64 kUnknownSortKey = std::numeric_limits<qint64>::min();

QString percentText(int64_t before, int64_t after) {
  if (before == 0) return after == 0 ? QString() : QStringLiteral(" (new)");
  const double pct = 100.0 * static_cast<double>(after - before) / static_cast<double>(before);
  return QString(" (%1%2%)").arg(pct >= 0 ? "+" : "").arg(pct, 0, 'f', std::abs(pct) >= 99.95 ? 0 : 1);
}

QVariant timeSortKey(int64_t ns) {
  return ns == core::kNoTime ? kUnknownSortKey : static_cast<qint64>(ns);
}
QVariant deltaSortKey(int64_t before, int64_t after) {
  return before == core::kNoTime || after == core::kNoTime ? kUnknownSortKey : static_cast<qint64>(after - before);
}
int64_t totalOrNone(const SideFigures& f) {
  return f.hasTime() ? f.total_ns : core::kNoTime;
}

const KernelDelta& kernel(const Comparison& c, size_t row) {
  return c.kernels[row];
}
const RangeDelta& range(const Comparison& c, size_t row) {
  return c.ranges[row];
}
const AppliedPlan& plan(const Comparison& c, size_t row) {
  return c.plans[row];
}

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

using Column = ComparisonModel::Column;
using Cell = std::function<QVariant(const Comparison&, size_t row)>;

Column column(QString header, QString tooltip, bool numeric, Cell display, Cell sort = {}, Cell cell_tooltip = {}) {
  return Column{std::move(header),  std::move(tooltip), numeric,
                std::move(display), std::move(sort),    std::move(cell_tooltip)};
}

// Count columns (before, after, difference) of a figure `get` gives for a row.
template <typename Get>
void addCountColumns(std::vector<Column>& cols, const QString& what, const QString& delta, const QString& tooltip,
                     Get get) {
  cols.push_back(column(what + " before", tooltip + " in the trace before", true,
                        [get](const Comparison& c, size_t r) { return QVariant::fromValue<qint64>(get(c, r).first); }));
  cols.push_back(column(what + " after", tooltip + " in the trace after", true, [get](const Comparison& c, size_t r) {
    return QVariant::fromValue<qint64>(get(c, r).second);
  }));
  cols.push_back(column(
      "Δ " + delta, tooltip + ": after minus before (and in percent of before)", true,
      [get](const Comparison& c, size_t r) {
        const auto [b, a] = get(c, r);
        return QVariant(countDeltaText(b, a));
      },
      [get](const Comparison& c, size_t r) {
        const auto [b, a] = get(c, r);
        return QVariant::fromValue<qint64>(a - b);
      }));
}

// Duration columns (before, after, difference); kNoTime where a side records none.
template <typename Get>
void addTimeColumns(std::vector<Column>& cols, const QString& what, const QString& delta, const QString& tooltip,
                    Get get) {
  cols.push_back(column(
      what + " before", tooltip + " in the trace before (n/a: not recorded)", true,
      [get](const Comparison& c, size_t r) { return QVariant(durationText(get(c, r).first)); },
      [get](const Comparison& c, size_t r) { return timeSortKey(get(c, r).first); }));
  cols.push_back(column(
      what + " after", tooltip + " in the trace after (n/a: not recorded)", true,
      [get](const Comparison& c, size_t r) { return QVariant(durationText(get(c, r).second)); },
      [get](const Comparison& c, size_t r) { return timeSortKey(get(c, r).second); }));
  cols.push_back(column(
      "Δ " + delta, tooltip + ": after minus before (and in percent of before)", true,
      [get](const Comparison& c, size_t r) {
        const auto [b, a] = get(c, r);
        return QVariant(timeDeltaText(b, a));
      },
      [get](const Comparison& c, size_t r) {
        const auto [b, a] = get(c, r);
        return deltaSortKey(b, a);
      }));
}

std::vector<Column> kernelColumns() {
  std::vector<Column> cols;
  cols.push_back(column(
      "Kernel", "The kernel's demangled name (mangled where the trace has no other): the traces are aligned by it",
      false, [](const Comparison& c, size_t r) { return QVariant(q(kernel(c, r).name)); }, {},
      [](const Comparison& c, size_t r) { return QVariant(q(kernel(c, r).name)); }));
  cols.push_back(column(
      "In", "Which traces launch it; a plan's fused kernel (after only) says which plan", false,
      [](const Comparison& c, size_t r) {
        const KernelDelta& k = kernel(c, r);
        return QVariant(k.fused_by.empty() ? QString(presenceName(k.presence())) : "fused: " + q(k.fused_by));
      },
      {},
      [](const Comparison& c, size_t r) {
        const KernelDelta& k = kernel(c, r);
        return QVariant(k.fused_by.empty() ? QString(presenceName(k.presence()))
                                           : "after only: the fused kernel of plan " + q(k.fused_by));
      }));
  addCountColumns(cols, "Launches", "launches", "Launches of the kernel", [](const Comparison& c, size_t r) {
    return std::pair{kernel(c, r).before.count, kernel(c, r).after.count};
  });
  cols.push_back(column(
      "Replaced", "Launches of the kernel that the applied plans replaced by their fused kernel", true,
      [](const Comparison& c, size_t r) {
        const int64_t n = kernel(c, r).replaced;
        return n ? QVariant::fromValue<qint64>(n) : QVariant(QString());
      },
      [](const Comparison& c, size_t r) { return QVariant::fromValue<qint64>(kernel(c, r).replaced); }));
  addTimeColumns(cols, "GPU time", "GPU time", "The sum of the kernel's recorded GPU durations",
                 [](const Comparison& c, size_t r) {
                   return std::pair{totalOrNone(kernel(c, r).before), totalOrNone(kernel(c, r).after)};
                 });
  addTimeColumns(cols, "Median", "median", "The median of the kernel's recorded GPU durations",
                 [](const Comparison& c, size_t r) {
                   return std::pair{kernel(c, r).before.median_ns, kernel(c, r).after.median_ns};
                 });
  return cols;
}

std::vector<Column> rangeColumns() {
  std::vector<Column> cols;
  cols.push_back(column(
      "Range", "The NVTX range with the ranges enclosing it on its thread, outermost first", false,
      [](const Comparison& c, size_t r) { return QVariant(q(range(c, r).path)); }, {},
      [](const Comparison& c, size_t r) { return QVariant(q(range(c, r).path)); }));
  cols.push_back(column("In", "Which traces have the range", false,
                        [](const Comparison& c, size_t r) { return QVariant(presenceName(range(c, r).presence())); }));
  addCountColumns(cols, "Instances", "instances", "Instances of the range", [](const Comparison& c, size_t r) {
    return std::pair{range(c, r).before.count, range(c, r).after.count};
  });
  addCountColumns(cols, "Launches", "launches", "Kernel launches made inside the range's instances, on their thread",
                  [](const Comparison& c, size_t r) {
                    return std::pair{range(c, r).launches_before, range(c, r).launches_after};
                  });
  addTimeColumns(cols, "Time", "time", "The sum of the instances' recorded durations (wall clock)",
                 [](const Comparison& c, size_t r) {
                   return std::pair{totalOrNone(range(c, r).before), totalOrNone(range(c, r).after)};
                 });
  addTimeColumns(cols, "Median", "median", "The median of the instances' recorded durations",
                 [](const Comparison& c, size_t r) {
                   return std::pair{range(c, r).before.median_ns, range(c, r).after.median_ns};
                 });
  return cols;
}

std::vector<Column> planColumns() {
  std::vector<Column> cols;
  cols.push_back(column(
      "Plan", "The plan directory the after-trace's `kfuse run` command line names", false,
      [](const Comparison& c, size_t r) { return QVariant(q(plan(c, r).name)); }, {},
      [](const Comparison& c, size_t r) { return QVariant(q(plan(c, r).dir)); }));
  cols.push_back(column("Candidate",
                        "The rank of the candidate the plan was rewritten from (kfuse analyze of the trace before)",
                        true, [](const Comparison& c, size_t r) { return QVariant(plan(c, r).candidate_rank); }));
  cols.push_back(column("Fusion", "The kind of fusion", false,
                        [](const Comparison& c, size_t r) { return QVariant(q(plan(c, r).fusion)); }));
  cols.push_back(column("Fused kernel", "The kernel the plan launches instead", false,
                        [](const Comparison& c, size_t r) { return QVariant(q(plan(c, r).fused_kernel)); }));
  cols.push_back(column("Replaced kernels", "The launches one fused launch replaces, in launch order", false,
                        [](const Comparison& c, size_t r) {
                          QStringList names;
                          for (const std::string& k : plan(c, r).replaced_kernels) names << q(k);
                          return QVariant(names.join(" → "));
                        }));
  cols.push_back(
      column("Occurrences", "Launches of the fused kernel in the trace after: one per replaced sequence", true,
             [](const Comparison& c, size_t r) { return QVariant::fromValue<qint64>(plan(c, r).occurrences); }));
  cols.push_back(
      column("Launches replaced", "Occurrences times the kernels per occurrence", true,
             [](const Comparison& c, size_t r) { return QVariant::fromValue<qint64>(plan(c, r).replacedLaunches()); }));
  return cols;
}

}  // namespace

QString durationText(int64_t ns) {
  return ns == core::kNoTime ? QStringLiteral("n/a") : q(core::formatDuration(ns));
}

QString countDeltaText(int64_t before, int64_t after) {
  const int64_t d = after - before;
  if (d == 0) return QStringLiteral("0");
  return QString("%1%2").arg(d > 0 ? "+" : "").arg(d) + percentText(before, after);
}

QString timeDeltaText(int64_t before_ns, int64_t after_ns) {
  if (before_ns == core::kNoTime || after_ns == core::kNoTime) return QStringLiteral("n/a");
  const int64_t d = after_ns - before_ns;
  if (d == 0) return QStringLiteral("0");
  return (d > 0 ? "+" : "-") + q(core::formatDuration(d > 0 ? d : -d)) + percentText(before_ns, after_ns);
}

const std::vector<ComparisonModel::Column>& ComparisonModel::columns(Table table) {
  static const std::vector<Column> kKernels = kernelColumns();
  static const std::vector<Column> kRanges = rangeColumns();
  static const std::vector<Column> kPlans = planColumns();
  switch (table) {
    case Table::kKernels: return kKernels;
    case Table::kRanges: return kRanges;
    case Table::kPlans: return kPlans;
  }
  return kKernels;
}

int ComparisonModel::column(Table table, const QString& header) {
  const auto& cols = columns(table);
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].header == header) return static_cast<int>(i);
  }
  return -1;
}

ComparisonModel::ComparisonModel(Table table, QObject* parent) : QAbstractTableModel(parent), table_(table) {}

void ComparisonModel::setComparison(std::shared_ptr<const Comparison> comparison) {
  beginResetModel();
  comparison_ = std::move(comparison);
  endResetModel();
}

int ComparisonModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !comparison_) return 0;
  switch (table_) {
    case Table::kKernels: return static_cast<int>(comparison_->kernels.size());
    case Table::kRanges: return static_cast<int>(comparison_->ranges.size());
    case Table::kPlans: return static_cast<int>(comparison_->plans.size());
  }
  return 0;
}

int ComparisonModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns(table_).size());
}

QVariant ComparisonModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !comparison_) {
    return {};
  }
  const Column& col = columns(table_)[static_cast<size_t>(index.column())];
  const size_t row = static_cast<size_t>(index.row());
  switch (role) {
    case Qt::DisplayRole: return col.display(*comparison_, row);
    case SortRole: return col.sort ? col.sort(*comparison_, row) : col.display(*comparison_, row);
    case Qt::ToolTipRole: return col.cell_tooltip ? col.cell_tooltip(*comparison_, row) : QVariant();
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(
          Qt::Alignment(col.numeric ? Qt::AlignRight | Qt::AlignVCenter : Qt::AlignLeft | Qt::AlignVCenter));
    default: return {};
  }
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
  const Column& col = columns(table_)[static_cast<size_t>(section)];
  if (role == Qt::DisplayRole) {
    // Figures are narrower than their titles: a numeric column's title on two lines ("Launches\nbefore").
    QString title = col.header;
    if (const qsizetype space = title.lastIndexOf(' '); col.numeric && space > 0) title[space] = '\n';
    return title;
  }
  if (role == Qt::ToolTipRole) return col.tooltip;
  return {};
}

}  // namespace kfuse::gui
