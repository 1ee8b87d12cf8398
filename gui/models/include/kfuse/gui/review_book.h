// The review decisions of the loaded trace: read from and written to the trace database (core/trace_review.h),
// keyed by candidate pattern. Decisions on a trace that is not a kfuse database cannot be stored; decide() says so.
#pragma once

#include <QObject>
#include <QString>

#include <map>
#include <memory>
#include <string>

#include "kfuse/core/trace_review.h"
#include "kfuse/gui/session.h"

namespace kfuse::gui {

class ReviewBook : public QObject {
  Q_OBJECT
 public:
  explicit ReviewBook(QObject* parent = nullptr);

  // Reads the decisions of `session`'s trace (none for imported formats). An error message, or empty.
  QString setSession(std::shared_ptr<const Session> session);
  // Stores a decision on candidate `index`; the error message (naming the file), or empty on success.
  QString decide(int index, core::ReviewVerdict verdict, const QString& note);

  const std::map<std::string, core::ReviewDecision>& decisions() const { return decisions_; }
  const core::ReviewDecision* decisionFor(int index) const;
  // Indices of candidates whose latest decision is "accepted", in rank order.
  std::vector<int> accepted() const;

 signals:
  void changed();

 private:
  std::shared_ptr<const Session> session_;
  std::map<std::string, core::ReviewDecision> decisions_;
};

}  // namespace kfuse::gui
