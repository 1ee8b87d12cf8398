#include "candidate_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

namespace kfuse::gui {

CandidatePanel::CandidatePanel(CandidatesModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  filter_ = new CandidateFilter(this);
  filter_->setSourceModel(model_);

  name_ = new QLineEdit(this);
  name_->setPlaceholderText(tr("kernel, operator or module contains…"));
  name_->setClearButtonEnabled(true);
  kind_ = new QComboBox(this);
  kind_->addItems({tr("all kinds"), tr("vertical"), tr("horizontal")});
  proven_ = new QCheckBox(tr("proven"), this);
  likely_ = new QCheckBox(tr("likely"), this);
  blocked_ = new QCheckBox(tr("blocked"), this);
  for (QCheckBox* b : {proven_, likely_, blocked_}) b->setChecked(true);
  confidence_ = new QComboBox(this);
  confidence_->addItems({tr("any confidence"), tr("≥ medium"), tr("high")});
  saving_ = new QDoubleSpinBox(this);
  saving_->setRange(0, 1e12);
  saving_->setDecimals(1);
  saving_->setSuffix(tr(" µs"));
  saving_->setPrefix(tr("saving ≥ "));
  occurrences_ = new QSpinBox(this);
  occurrences_->setRange(0, 1'000'000'000);
  occurrences_->setPrefix(tr("occurrences ≥ "));

  table_ = new QTableView(this);
  table_->setModel(filter_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(0, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);

  auto* row1 = new QHBoxLayout;
  row1->addWidget(name_, 2);
  row1->addWidget(kind_);
  row1->addWidget(confidence_);
  auto* row2 = new QHBoxLayout;
  row2->addWidget(new QLabel(tr("legality:"), this));
  row2->addWidget(proven_);
  row2->addWidget(likely_);
  row2->addWidget(blocked_);
  row2->addWidget(saving_);
  row2->addWidget(occurrences_);
  row2->addStretch();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(row1);
  layout->addLayout(row2);
  layout->addWidget(table_, 1);

  connect(name_, &QLineEdit::textChanged, this, &CandidatePanel::applyFilters);
  connect(kind_, &QComboBox::currentIndexChanged, this, &CandidatePanel::applyFilters);
  connect(confidence_, &QComboBox::currentIndexChanged, this, &CandidatePanel::applyFilters);
  for (QCheckBox* b : {proven_, likely_, blocked_})
    connect(b, &QCheckBox::toggled, this, &CandidatePanel::applyFilters);
  connect(saving_, &QDoubleSpinBox::valueChanged, this, &CandidatePanel::applyFilters);
  connect(occurrences_, &QSpinBox::valueChanged, this, &CandidatePanel::applyFilters);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (selecting_ || !current.isValid()) return;
    emit candidatePicked(current.data(CandidatesModel::CandidateIndexRole).toInt());
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] { emit selectionChanged(); });
  connect(model_, &QAbstractItemModel::modelReset, this, &CandidatePanel::fitColumns);
}

void CandidatePanel::fitColumns() {
  table_->resizeColumnsToContents();
  // The text columns (operators, module, remedies) can be as wide as a kernel name: capped so that the columns
  // after them stay within reach; each cell's tooltip has the whole text.
  QHeaderView* header = table_->horizontalHeader();
  for (int col = 0; col < header->count(); ++col) {
    header->resizeSection(col, std::min(header->sectionSize(col), kMaxColumnWidth));
  }
}

QCheckBox* CandidatePanel::legalityBox(analyzer::Legality l) const {
  switch (l) {
    case analyzer::Legality::kProven: return proven_;
    case analyzer::Legality::kLikely: return likely_;
    case analyzer::Legality::kBlocked: return blocked_;
  }
  return nullptr;
}

void CandidatePanel::applyFilters() {
  using analyzer::CandidateKind;
  using analyzer::Legality;
  filter_->setNameFilter(name_->text());
  std::set<CandidateKind> kinds;
  if (kind_->currentIndex() == 1) kinds = {CandidateKind::kVertical};
  if (kind_->currentIndex() == 2) kinds = {CandidateKind::kHorizontal};
  filter_->setKinds(kinds);
  std::set<Legality> legal;
  if (proven_->isChecked()) legal.insert(Legality::kProven);
  if (likely_->isChecked()) legal.insert(Legality::kLikely);
  if (blocked_->isChecked()) legal.insert(Legality::kBlocked);
  if (legal.empty()) legal.insert(static_cast<Legality>(-1));  // nothing ticked: nothing shown
  filter_->setLegalities(legal);
  const analyzer::Confidence levels[] = {analyzer::Confidence::kLow, analyzer::Confidence::kMedium,
                                         analyzer::Confidence::kHigh};
  filter_->setMinConfidence(levels[std::clamp(confidence_->currentIndex(), 0, 2)]);
  filter_->setMinTotalSavingUs(saving_->value());
  filter_->setMinOccurrences(occurrences_->value());
}

void CandidatePanel::selectCandidate(int index) {
  selecting_ = true;
  bool found = false;
  for (int r = 0; r < filter_->rowCount(); ++r) {
    const QModelIndex i = filter_->index(r, 0);
    if (i.data(CandidatesModel::CandidateIndexRole).toInt() == index) {
      QItemSelectionModel* sm = table_->selectionModel();
      // The echo of a Ctrl/Shift+click (the clicked row became current and the shared selection follows it) keeps
      // the rows selected with it, also when Ctrl+click took the current row out of the selection.
      const bool kept = sm->currentIndex().row() == r && sm->hasSelection();
      if (!kept) sm->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      table_->scrollTo(i);
      found = true;
      break;
    }
  }
  if (!found) table_->selectionModel()->clearSelection();
  selecting_ = false;
}

int CandidatePanel::selectedCandidate() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return -1;
  return rows.front().data(CandidatesModel::CandidateIndexRole).toInt();
}

std::vector<int> CandidatePanel::selectedCandidates() const {
  std::vector<int> out;
  for (const QModelIndex& row : table_->selectionModel()->selectedRows()) {
    out.push_back(row.data(CandidatesModel::CandidateIndexRole).toInt());
  }
  // Rows are in the order they were selected; candidates are in rank order.
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kfuse::gui
