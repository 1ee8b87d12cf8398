// The candidates table with its filter bar (kind, legality, least confidence, least total saving, least
// occurrences, kernel name). Emits the candidate a user picks; follows the shared selection.
#pragma once

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableView>
#include <QWidget>

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

  // Selects candidate `index`'s row (if the filter shows it) without emitting candidatePicked.
  void selectCandidate(int index);
  int selectedCandidate() const;

 signals:
  void candidatePicked(int index);

 private:
  void applyFilters();
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
