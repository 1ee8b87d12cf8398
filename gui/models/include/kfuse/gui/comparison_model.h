// The before/after tables as Qt item models over one Comparison: kernels, NVTX ranges, and the plans with the
// launches they replaced. Columns are declared once per table (header, display text, sort key, tooltips), as for
// the candidates table. Times the traces do not record read "n/a" and sort below every recorded one; differences
// read "+3 (+25.0%)", "new" where the before side is zero. SortRole gives numbers for numeric columns; a numeric
// column's title is shown on two lines. Links Qt Core only; the Comparison is shared read-only.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <QVariant>

#include <functional>
#include <memory>
#include <vector>

#include "kfuse/gui/comparison.h"

namespace kfuse::gui {

// "+3 (+25.0%)", "−2 (−100%)", "0", "+3 (new)"; durations with their unit ("+1.250 us (+8.1%)"). n/a when either side
// is kNoTime.
QString countDeltaText(int64_t before, int64_t after);
QString timeDeltaText(int64_t before_ns, int64_t after_ns);
QString durationText(int64_t ns);  // core::formatDuration, "n/a" for kNoTime

class ComparisonModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum class Table { kKernels, kRanges, kPlans };
  enum Role { SortRole = Qt::UserRole + 1 };

  struct Column {
    QString header;
    QString tooltip;  // the header's
    bool numeric = false;
    std::function<QVariant(const Comparison&, size_t row)> display;
    std::function<QVariant(const Comparison&, size_t row)> sort;          // empty: sort by display
    std::function<QVariant(const Comparison&, size_t row)> cell_tooltip;  // empty: none
  };
  static const std::vector<Column>& columns(Table table);
  // The position of the column headed `header` in `table`, -1 when there is none.
  static int column(Table table, const QString& header);

  explicit ComparisonModel(Table table, QObject* parent = nullptr);
  void setComparison(std::shared_ptr<const Comparison> comparison);
  const Comparison* comparison() const { return comparison_.get(); }
  Table table() const { return table_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  Table table_;
  std::shared_ptr<const Comparison> comparison_;
};

}  // namespace kfuse::gui
