// The review decisions of the loaded trace: read from and written to the trace database (core/trace_review.h),
// keyed by candidate pattern. Decisions on a trace that is not a kfuse database cannot be stored; decide() says so.
//
// The accepted candidates must form a consistent set: a launch can belong to one fusion only, and two candidates
// the analyzer lists in each other's conflicts_with (they share a launch) cannot both be applied. Accepting is
// refused, with the analyzer's reason (analyzer::candidateConflictText), when a candidate conflicts with one
// accepted already or with another accepted at the same time. Lives on the GUI thread.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kfuse/core/trace_review.h"
#include "kfuse/gui/session.h"

namespace kfuse::gui {

// One reason a set of candidates cannot be accepted together: candidate `index` conflicts with candidate `with`
// (indices into report.candidates).
struct ReviewConflict {
  int index = -1;
  int with = -1;
  bool with_accepted = false;  // `with` is accepted already (else it is being accepted at the same time)
  QString reason;              // "#2 (mul + scale) shares a launch of `mul` with #1 (launch id 9): ..."
};

// The candidates accepted in `decisions`, as indices into session.report.candidates in rank order.
std::vector<int> acceptedCandidates(const Session& session,
                                    const std::map<std::string, core::ReviewDecision>& decisions);
// The candidates among `accepted` that candidate `index` conflicts with (never `index` itself).
std::vector<int> conflictingCandidates(const Session& session, int index, const std::vector<int>& accepted);
// Why accepting `indices` on top of `accepted` would leave an inconsistent set: one conflict per pair, each pair
// once; empty when the union is consistent. Pairs inside `accepted` alone are not reported.
std::vector<ReviewConflict> acceptConflicts(const Session& session, const std::vector<int>& indices,
                                            const std::vector<int>& accepted);

class ReviewBook : public QObject {
  Q_OBJECT
 public:
  explicit ReviewBook(QObject* parent = nullptr);

  // Reads the decisions of `session`'s trace (none for imported formats). An error message, or empty.
  QString setSession(std::shared_ptr<const Session> session);
  // Stores a decision on candidate `index`; the error message (naming the file), or empty on success.
  QString decide(int index, core::ReviewVerdict verdict, const QString& note);
  // Stores the same decision and note on every candidate of `indices`, all of them or none: accepting is refused
  // when the accepted set would not be consistent (the message names each conflict and its shared launches).
  QString decide(const std::vector<int>& indices, core::ReviewVerdict verdict, const QString& note);

  const std::map<std::string, core::ReviewDecision>& decisions() const { return decisions_; }
  const core::ReviewDecision* decisionFor(int index) const;
  // Indices of candidates whose latest decision is "accepted", in rank order.
  std::vector<int> accepted() const;
  // The conflicts inside the accepted set (decisions stored before accepting was checked, or by another tool); empty
  // when it is consistent. Exporting plans refuses an inconsistent set.
  std::vector<ReviewConflict> acceptedSetConflicts() const;

 signals:
  void changed();

 private:
  bool reload();  // false when the decisions could not be read back
  std::shared_ptr<const Session> session_;
  std::map<std::string, core::ReviewDecision> decisions_;
};

}  // namespace kfuse::gui
