// The before/after window (File → Compare with…, `kfuse-gui --compare BEFORE AFTER`): two traces aligned by
// kernel and by NVTX range path (models/comparison.h) in three sortable tables — kernels, ranges, and the plans with
// the launches they replaced — under a summary line and the comparison's notes. Loading runs on a worker thread; a
// file that cannot be opened shows the importer's message, naming the file, in a red banner.
#pragma once

#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QWidget>

#include <memory>

#include "kfuse/gui/comparison_model.h"

namespace kfuse::gui {

class CompareWindow : public QWidget {
  Q_OBJECT
 public:
  // Longest a text column (kernel names, range paths) is made by resizing to its contents: the figures beside it
  // stay in view at 1280 pixels. The user can widen it.
  static constexpr int kMaxTextColumnWidth = 340;

  explicit CompareWindow(QWidget* parent = nullptr);
  ~CompareWindow() override;  // waits for a running load (its result is dropped)

  // Compares the two files in the background; the tables show the result when it arrives.
  void open(const QString& before, const QString& after);
  // Blocks until a running comparison has finished and the window shows its result (tests, screenshots).
  void waitForLoad();
  bool busy() const { return busy_; }

  std::shared_ptr<const Comparison> comparison() const { return comparison_; }
  QString bannerText() const { return banner_->isVisible() ? banner_->text() : QString(); }
  QString summaryText() const { return summary_->text(); }
  QTableView* kernelsView() const { return kernels_; }
  QTableView* rangesView() const { return ranges_; }
  QTableView* plansView() const { return plans_; }

 signals:
  void loaded();
  void failed(const QString& message);

 private:
  QTableView* addTable(QWidget* box, ComparisonModel* model, const QString& sort_column, Qt::SortOrder order);
  void showComparison(std::shared_ptr<const Comparison> comparison);
  void showError(const QString& message);
  void fitColumns(QTableView* view);

  ComparisonModel *kernel_model_, *range_model_, *plan_model_;
  QTableView *kernels_, *ranges_, *plans_;
  QLabel *title_, *summary_, *banner_, *ranges_caption_;
  std::shared_ptr<const Comparison> comparison_;
  bool busy_ = false;
  int generation_ = 0;  // a newer open() drops the result of an older one
};

}  // namespace kfuse::gui
