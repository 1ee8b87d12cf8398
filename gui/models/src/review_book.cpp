#include "kfuse/gui/review_book.h"

#include <QProcessEnvironment>

namespace kfuse::gui {

ReviewBook::ReviewBook(QObject* parent) : QObject(parent) {}

QString ReviewBook::setSession(std::shared_ptr<const Session> session) {
  session_ = std::move(session);
  decisions_.clear();
  QString error;
  if (session_ && session_->isKfuseTrace()) {
    auto read = core::readReviewDecisions(session_->path);
    if (read.ok()) {
      for (core::ReviewDecision& d : *read) decisions_[d.candidate_key] = std::move(d);
    } else {
      error = QString::fromStdString(read.status().message());
    }
  }
  emit changed();
  return error;
}

QString ReviewBook::decide(int index, core::ReviewVerdict verdict, const QString& note) {
  if (!session_ || !session_->candidate(index)) return QStringLiteral("no candidate selected");
  if (!session_->isKfuseTrace()) {
    return QString::fromStdString(session_->path) + ": an imported " + QString::fromStdString(session_->input.format) +
           " trace cannot hold review decisions; save it as a kfuse trace first (File → Save as kfuse trace)";
  }
  core::ReviewDecision d;
  d.candidate_key = session_->candidate_keys[static_cast<size_t>(index)];
  d.rank = session_->report.candidates[static_cast<size_t>(index)].rank;
  d.verdict = verdict;
  d.note = note.toStdString();
  d.reviewer = QProcessEnvironment::systemEnvironment().value("USER").toStdString();
  const Status s = core::storeReviewDecision(session_->path, d);
  if (!s.ok()) return QString::fromStdString(s.message());
  // Read back what was stored (the time it was given).
  auto read = core::readReviewDecisions(session_->path);
  if (read.ok()) {
    decisions_.clear();
    for (core::ReviewDecision& r : *read) decisions_[r.candidate_key] = std::move(r);
  } else {
    decisions_[d.candidate_key] = d;
  }
  emit changed();
  return {};
}

const core::ReviewDecision* ReviewBook::decisionFor(int index) const {
  if (!session_ || !session_->candidate(index)) return nullptr;
  auto it = decisions_.find(session_->candidate_keys[static_cast<size_t>(index)]);
  return it == decisions_.end() ? nullptr : &it->second;
}

std::vector<int> ReviewBook::accepted() const {
  std::vector<int> out;
  if (!session_) return out;
  for (size_t i = 0; i < session_->report.candidates.size(); ++i) {
    const core::ReviewDecision* d = decisionFor(static_cast<int>(i));
    if (d && d->verdict == core::ReviewVerdict::kAccepted) out.push_back(static_cast<int>(i));
  }
  return out;
}

}  // namespace kfuse::gui
