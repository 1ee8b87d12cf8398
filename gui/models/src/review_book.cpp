#include "kfuse/gui/review_book.h"

#include <QProcessEnvironment>

#include <algorithm>
#include <set>

#include "kfuse/gui/candidates_model.h"

namespace kfuse::gui {

namespace {

// Whether the analyzer says that a and b share a launch (either lists the other, as rewriter::chooseConsistentSet
// reads it).
bool conflict(const analyzer::Candidate& a, const analyzer::Candidate& b) {
  if (&a == &b) return false;
  auto lists = [](const analyzer::Candidate& c, int rank) {
    return std::find(c.conflicts_with.begin(), c.conflicts_with.end(), rank) != c.conflicts_with.end();
  };
  return lists(a, b.rank) || lists(b, a.rank);
}

// How the two candidates of a conflict stand: which sentence ends its reason.
enum class Pair { kWithAccepted, kBothNew, kBothAccepted };

ReviewConflict describe(const Session& s, int index, int with, Pair pair) {
  const analyzer::Candidate& c = s.report.candidates[static_cast<size_t>(index)];
  const analyzer::Candidate& w = s.report.candidates[static_cast<size_t>(with)];
  QString reason = QString("#%1 (%2) %3")
                       .arg(c.rank)
                       .arg(candidateMembers(c))
                       .arg(QString::fromStdString(analyzer::candidateConflictText(c, w)));
  switch (pair) {
    case Pair::kWithAccepted:
      reason += QString("; #%1 is accepted (reject it first to accept #%2)").arg(w.rank).arg(c.rank);
      break;
    case Pair::kBothNew: reason += QString("; both are being accepted"); break;
    case Pair::kBothAccepted: reason += QString("; both are accepted"); break;
  }
  return ReviewConflict{index, with, pair != Pair::kBothNew, reason};
}

}  // namespace

std::vector<int> acceptedCandidates(const Session& session,
                                    const std::map<std::string, core::ReviewDecision>& decisions) {
  std::vector<int> out;
  for (size_t i = 0; i < session.report.candidates.size() && i < session.candidate_keys.size(); ++i) {
    auto it = decisions.find(session.candidate_keys[i]);
    if (it != decisions.end() && it->second.verdict == core::ReviewVerdict::kAccepted) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

std::vector<int> conflictingCandidates(const Session& session, int index, const std::vector<int>& accepted) {
  std::vector<int> out;
  const analyzer::Candidate* c = session.candidate(index);
  if (!c) return out;
  for (int a : accepted) {
    const analyzer::Candidate* other = session.candidate(a);
    if (other && conflict(*c, *other)) out.push_back(a);
  }
  return out;
}

std::vector<ReviewConflict> acceptConflicts(const Session& session, const std::vector<int>& indices,
                                            const std::vector<int>& accepted) {
  std::vector<ReviewConflict> out;
  const std::set<int> already(accepted.begin(), accepted.end());
  std::set<int> taken;  // the new ones checked so far: each pair among them reported once
  for (int index : indices) {
    if (!session.candidate(index) || already.count(index) || taken.count(index)) continue;
    for (int with : conflictingCandidates(session, index, accepted)) {
      out.push_back(describe(session, index, with, Pair::kWithAccepted));
    }
    for (int with : conflictingCandidates(session, index, {taken.begin(), taken.end()})) {
      out.push_back(describe(session, index, with, Pair::kBothNew));
    }
    taken.insert(index);
  }
  return out;
}

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
  return decide(std::vector<int>{index}, verdict, note);
}

QString ReviewBook::decide(const std::vector<int>& indices, core::ReviewVerdict verdict, const QString& note) {
  if (!session_ || indices.empty()) return QStringLiteral("no candidate selected");
  for (int index : indices) {
    if (!session_->candidate(index)) return QStringLiteral("no candidate %1").arg(index);
  }
  if (!session_->isKfuseTrace()) {
    return QString::fromStdString(session_->path) + ": an imported " + QString::fromStdString(session_->input.format) +
           " trace cannot hold review decisions; save it as a kfuse trace first (File → Save as kfuse trace)";
  }
  if (verdict == core::ReviewVerdict::kAccepted) {
    const std::vector<ReviewConflict> conflicts = acceptConflicts(*session_, indices, accepted());
    if (!conflicts.empty()) {
      QStringList lines = {indices.size() == 1 ? QStringLiteral("Not accepted: a launch can belong to one fusion only.")
                                               : QStringLiteral("None of the %1 candidates accepted: a launch can "
                                                                "belong to one fusion only.")
                                                     .arg(indices.size())};
      for (const ReviewConflict& c : conflicts) lines << c.reason;
      return lines.join('\n');
    }
  }
  std::vector<core::ReviewDecision> batch;
  const std::string reviewer = QProcessEnvironment::systemEnvironment().value("USER").toStdString();
  for (int index : indices) {
    core::ReviewDecision d;
    d.candidate_key = session_->candidate_keys[static_cast<size_t>(index)];
    d.rank = session_->report.candidates[static_cast<size_t>(index)].rank;
    d.verdict = verdict;
    d.note = note.toStdString();
    d.reviewer = reviewer;
    batch.push_back(std::move(d));
  }
  const Status s = core::storeReviewDecisions(session_->path, batch);
  if (!s.ok()) return QString::fromStdString(s.message());
  if (!reload()) {
    for (core::ReviewDecision& d : batch) decisions_[d.candidate_key] = std::move(d);
  }
  emit changed();
  return {};
}

bool ReviewBook::reload() {
  // Read back what was stored (the time it was given).
  auto read = core::readReviewDecisions(session_->path);
  if (!read.ok()) return false;
  decisions_.clear();
  for (core::ReviewDecision& r : *read) decisions_[r.candidate_key] = std::move(r);
  return true;
}

const core::ReviewDecision* ReviewBook::decisionFor(int index) const {
  if (!session_ || !session_->candidate(index)) return nullptr;
  auto it = decisions_.find(session_->candidate_keys[static_cast<size_t>(index)]);
  return it == decisions_.end() ? nullptr : &it->second;
}

std::vector<int> ReviewBook::accepted() const {
  return session_ ? acceptedCandidates(*session_, decisions_) : std::vector<int>{};
}

std::vector<ReviewConflict> ReviewBook::acceptedSetConflicts() const {
  std::vector<ReviewConflict> out;
  if (!session_) return out;
  const std::vector<int> all = accepted();
  for (size_t k = 0; k < all.size(); ++k) {
    // Each pair once: against the accepted candidates of better rank.
    for (int with : conflictingCandidates(*session_, all[k], {all.begin(), all.begin() + static_cast<long>(k)})) {
      out.push_back(describe(*session_, all[k], with, Pair::kBothAccepted));
    }
  }
  return out;
}

}  // namespace kfuse::gui
