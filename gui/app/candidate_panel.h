// The candidates table with its filter bar (kind, legality, least confidence, least total saving, least
// occurrences, kernel / operator / module name). Emits the candidate a user picks; follows the shared selection.
// Rows can be selected several at a time (Ctrl/Shift+click) for one review decision on all of them; the current row
// is the shared selection's candidate. Columns are sized to their contents, the wide text ones capped at
// kMaxColumnWidth, so that rank, kind, legality and saving (the first columns) are in view in a 1280-pixel-wide window.
#pragma once

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableView>
#include <QWidget>

#include <vector>

#include "kfuse/gui/candidates_model.h"

namespace kfuse::gui {

class CandidatePanel : public QWidget {
  Q_OBJECT
 public:
  explicit CandidatePanel(CandidatesModel* model, QWidget* parent = nullptr);

  CandidateFilter* filter() const { return filter_; }
  QTableView* table() const { return table_; }
  QLineEdit* nameEdit() const { return name_; }
  QComboBox* kindBox() const { return kind_; }
  QCheckBox* legalityBox(analyzer::Legality l) const;
  QComboBox* confidenceBox() const { return confidence_; }
  QDoubleSpinBox* savingSpin() const { return saving_; }
  QSpinBox* occurrencesSpin() const { return occurrences_; }

  // Makes candidate `index`'s row the current and only selected one (if the filter shows it) without emitting
  // candidatePicked; a row that is current within a larger selection keeps that selection.
  void selectCandidate(int index);
  int selectedCandidate() const;
  // The selected rows' candidates (indices into report.candidates), in rank order.
  std::vector<int> selectedCandidates() const;
  static constexpr int kMaxColumnWidth = 320;

 signals:
  void candidatePicked(int index);
  void selectionChanged();  // the set of selected rows

 private:
  void applyFilters();
  void fitColumns();
  CandidatesModel* model_;
  CandidateFilter* filter_;
  QTableView* table_;
  QLineEdit* name_;
  QComboBox* kind_;
  QCheckBox *proven_, *likely_, *blocked_;
  QComboBox* confidence_;
  QDoubleSpinBox* saving_;
  QSpinBox* occurrences_;
  bool selecting_ = false;
};

}  // namespace kfuse::gui
