// The candidates table (a Qt item model over Report::candidates) and its filter.
//
// Columns are declared once, in a table of CandidateColumn (header, display text, sort key, tooltips): a field the
// analyzer adds to Candidate becomes a column by adding one entry to candidateColumns(). The verdict columns (kind,
// legality, saving per occurrence) come first so that they stay in view in a narrow window, then the members
// (operators or kernels) and their module, then the other figures. A PyTorch trace's members read as its operators and
// module path, in the words `kfuse analyze` prints (analyzer::candidateMembersText, candidateWhereText). Sorting uses
// SortRole (numbers for numeric columns); CandidateIndexRole gives the row's index into report.candidates whatever the
// proxy order. Links Qt Core/Gui only.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QString>
#include <QVariant>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kfuse/core/trace_review.h"
#include "kfuse/gui/session.h"

namespace kfuse::gui {

struct CandidateColumn {
  QString header;
  std::function<QVariant(const analyzer::Candidate&)> display;
  std::function<QVariant(const analyzer::Candidate&)> sort;          // empty: sort by display
  QString tooltip;                                                   // the header's
  std::function<QVariant(const analyzer::Candidate&)> cell_tooltip;  // empty: the verdict sentence
  bool numeric = false;                                              // right-aligned
};
// The table's columns in order (the review column comes after these).
const std::vector<CandidateColumn>& candidateColumns();
// The position of the column headed `header`, -1 when there is none.
int candidateColumn(const QString& header);

// "a → b → c" (vertical) or "a + b" (horizontal), short kernel names.
QString candidateTitle(const analyzer::Candidate& c);
// The members as `kfuse analyze` names them: operators with dtypes and shapes where a PyTorch trace says which
// operator launched each kernel ("aten::mul f32[1,4096] → aten::sum f32[1,4096]"), else the short kernel names.
QString candidateMembers(const analyzer::Candidate& c);

class CandidatesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // ConflictRole (conflicts column): the ranks of the accepted candidates this one conflicts with (QVariantList).
  enum Role { SortRole = Qt::UserRole + 1, CandidateIndexRole, ReviewRole, ConflictRole };

  explicit CandidatesModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const Session> session);
  // Replaces the candidates' costs (the detail's GPU selector re-costs them); ranks and membership stay.
  void setReport(const analyzer::Report& report);
  // Review decisions by candidate key (the review column, and the conflicts column's accepted candidates).
  void setDecisions(const std::map<std::string, core::ReviewDecision>& decisions);

  const analyzer::Report* report() const { return session_ ? &report_ : nullptr; }
  int reviewColumn() const { return static_cast<int>(candidateColumns().size()); }
  // The candidates each shares a launch with ("#1 (accepted), #4"), flagged in red where one of them is accepted;
  // the tooltip has the analyzer's reason for each (analyzer::candidateConflictText).
  int conflictColumn() const { return reviewColumn() + 1; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant conflictData(int row, int role) const;
  std::shared_ptr<const Session> session_;
  analyzer::Report report_;
  std::map<std::string, core::ReviewDecision> decisions_;
  std::vector<int> accepted_;  // indices of the accepted candidates
};

// Filters: kinds, legalities, the least confidence, the least predicted total saving, the least occurrences and
// a name substring (case-insensitive) matched against the kernel names, the members' operators and modules, and
// the module pattern. Sorting by SortRole.
class CandidateFilter : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit CandidateFilter(QObject* parent = nullptr);

  void setKinds(std::set<analyzer::CandidateKind> kinds);       // empty: all
  void setLegalities(std::set<analyzer::Legality> legalities);  // empty: all
  void setMinConfidence(analyzer::Confidence c);                // kLow: all
  void setMinTotalSavingUs(double us);
  void setMinOccurrences(int n);
  void setNameFilter(const QString& text);
  QString nameFilter() const { return name_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  std::set<analyzer::CandidateKind> kinds_;
  std::set<analyzer::Legality> legalities_;
  analyzer::Confidence min_confidence_ = analyzer::Confidence::kLow;
  double min_saving_us_ = 0;
  int min_occurrences_ = 0;
  QString name_;
};

}  // namespace kfuse::gui
