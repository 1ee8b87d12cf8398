#include "compare_view.h"

#include <QApplication>
#include <QFileInfo>
#include <QHeaderView>
#include <QSplitter>
#include <QThread>
#include <QVBoxLayout>

#include "kfuse/gui/jobs.h"

namespace kfuse::gui {
namespace {

QLabel* caption(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setStyleSheet("font-weight: bold;");
  return label;
}

}  // namespace

CompareWindow::CompareWindow(QWidget* parent) : QWidget(parent, Qt::Window) {
  setWindowTitle(tr("kfuse — before/after"));
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel(this);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  title_->setWordWrap(true);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_ = new QLabel(this);
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->setMargin(6);
  banner_->hide();
  layout->addWidget(title_);
  layout->addWidget(summary_);
  layout->addWidget(banner_);

  kernel_model_ = new ComparisonModel(ComparisonModel::Table::kKernels, this);
  range_model_ = new ComparisonModel(ComparisonModel::Table::kRanges, this);
  plan_model_ = new ComparisonModel(ComparisonModel::Table::kPlans, this);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  const auto section = [&](const QString& text, QLabel** label_out) {
    auto* box = new QWidget(splitter);
    auto* l = new QVBoxLayout(box);
    l->setContentsMargins(0, 4, 0, 0);
    QLabel* label = caption(text, box);
    l->addWidget(label);
    if (label_out) *label_out = label;
    splitter->addWidget(box);
    return box;
  };
  kernels_ = addTable(section(tr("Kernels (aligned by name)"), nullptr), kernel_model_, "Launches before",
                      Qt::DescendingOrder);
  ranges_ = addTable(section(tr("NVTX ranges (aligned by name path)"), &ranges_caption_), range_model_, "Time before",
                     Qt::DescendingOrder);
  plans_ = addTable(section(tr("Plans applied: the launches each fused kernel replaced"), nullptr), plan_model_,
                    "Occurrences", Qt::DescendingOrder);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setStretchFactor(2, 1);
  layout->addWidget(splitter, 1);
  resize(1280, 800);
}

CompareWindow::~CompareWindow() {
  waitForLoad();
}

QTableView* CompareWindow::addTable(QWidget* box, ComparisonModel* model, const QString& sort_column,
                                    Qt::SortOrder order) {
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model);
  proxy->setSortRole(ComparisonModel::SortRole);
  auto* view = new QTableView(box);
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setAlternatingRowColors(true);
  view->setWordWrap(false);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setStretchLastSection(true);
  view->sortByColumn(ComparisonModel::column(model->table(), sort_column), order);
  box->layout()->addWidget(view);
  return view;
}

void CompareWindow::open(const QString& before, const QString& after) {
  busy_ = true;
  const int generation = ++generation_;
  banner_->hide();
  title_->setText(
      tr("<b>Before</b> %1 &nbsp;→&nbsp; <b>After</b> %2").arg(before.toHtmlEscaped(), after.toHtmlEscaped()));
  summary_->setText(tr("Comparing…"));
  runInBackground<Expected<Comparison>>(
      this, [b = before.toStdString(), a = after.toStdString()] { return loadComparison(b, a); },
      [this, generation](Expected<Comparison> result) {
        if (generation != generation_) return;  // a newer open() is running
        busy_ = false;
        if (!result.ok()) {
          showError(QString::fromStdString(result.status().message()));
          return;
        }
        showComparison(std::make_shared<const Comparison>(std::move(*result)));
      });
}

void CompareWindow::waitForLoad() {
  while (busy_) {
    QThread::msleep(5);
    QApplication::processEvents();
  }
}

void CompareWindow::showError(const QString& message) {
  comparison_.reset();
  for (ComparisonModel* m : {kernel_model_, range_model_, plan_model_}) m->setComparison(nullptr);
  summary_->setText(tr("Nothing to compare."));
  banner_->setText(tr("Could not compare: %1").arg(message));
  banner_->setStyleSheet("background:#fde2e1; color:#7a1010; border:1px solid #e0a0a0;");
  banner_->show();
  emit failed(message);
}

void CompareWindow::showComparison(std::shared_ptr<const Comparison> c) {
  comparison_ = c;
  for (ComparisonModel* m : {kernel_model_, range_model_, plan_model_}) m->setComparison(c);
  int64_t occurrences = 0, replaced = 0;
  for (const AppliedPlan& p : c->plans) {
    occurrences += p.occurrences;
    replaced += p.replacedLaunches();
  }
  const int64_t change = c->launches_after - c->launches_before;
  QString summary = tr("Kernel launches: %1 before, %2 after, %3.")
                        .arg(c->launches_before)
                        .arg(c->launches_after)
                        .arg(change == 0 ? tr("unchanged") : countDeltaText(c->launches_before, c->launches_after));
  summary += c->plans.empty() ? tr(" No plan is named in the trace after (not recorded under `kfuse run --plan`).")
                              : tr(" %1 plan(s) named in the trace after: %2 occurrence(s) fused, replacing %3 "
                                   "launch(es).")
                                    .arg(c->plans.size())
                                    .arg(occurrences)
                                    .arg(replaced);
  summary_->setText(summary);
  ranges_caption_->setText(c->ranges.empty() ? tr("NVTX ranges: neither trace records any")
                                             : tr("NVTX ranges (aligned by name path)"));
  // Without ranges the section is its caption alone; the kernels and plans take the room.
  ranges_->setVisible(!c->ranges.empty());
  ranges_caption_->parentWidget()->setMaximumHeight(c->ranges.empty() ? ranges_caption_->sizeHint().height() + 8
                                                                      : QWIDGETSIZE_MAX);
  QStringList notes;
  for (const std::string& n : c->notes) notes << QString::fromStdString(n);
  banner_->setText(notes.join("\n"));
  banner_->setStyleSheet("background:#e6f1fb; color:#10365a; border:1px solid #a0c0e0;");
  banner_->setVisible(!notes.isEmpty());
  for (QTableView* v : {kernels_, ranges_, plans_}) fitColumns(v);
  emit loaded();
}

void CompareWindow::fitColumns(QTableView* view) {
  view->resizeColumnsToContents();  // the cells and the header's title
  QHeaderView* header = view->horizontalHeader();
  for (int col = 0; col < header->count(); ++col) {
    header->resizeSection(col, std::min(header->sectionSize(col), kMaxTextColumnWidth));
  }
}

}  // namespace kfuse::gui
