// The PTX view: the selected candidate's member kernels (their .entry from the trace's module images) beside the
// fused kernel, with syntax highlighting, and the correspondence (which part of the fused launch runs which
// member). "Rewrite" runs the rewriter (rewriter::rewriteCandidate, as `kfuse rewrite` does, without validation)
// into a scratch plan directory in the background and shows the fused PTX, ptxas resources and occupancy;
// "Validate" runs rewriter::validatePlan on the emulator (as `kfuse validate`) and shows the verdict.
#pragma once

#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QWidget>

#include <memory>
#include <optional>

#include "kfuse/gui/session.h"
#include "kfuse/rewriter/plan.h"

namespace kfuse::gui {

class PtxView : public QWidget {
  Q_OBJECT
 public:
  explicit PtxView(QWidget* parent = nullptr);
  void setSession(std::shared_ptr<const Session> session);
  void showCandidate(int index);

  void rewrite();
  void validate();
  bool busy() const { return busy_; }
  QString membersText() const { return members_->toPlainText(); }
  QString fusedText() const { return fused_->toPlainText(); }
  QString resultText() const { return result_->text(); }

 signals:
  void finished();  // a rewrite or validation ended (tests wait for it)

 private:
  void setBusy(bool busy, const QString& what = {});
  std::shared_ptr<const Session> session_;
  int candidate_ = -1;
  QPlainTextEdit* members_;
  QPlainTextEdit* fused_;
  QLabel* header_;
  QLabel* result_;
  QPushButton* rewrite_;
  QPushButton* validate_;
  bool busy_ = false;
  std::unique_ptr<QTemporaryDir> scratch_;
  std::optional<rewriter::Plan> plan_;
  QString plan_dir_;
  int generation_ = 0;
};

}  // namespace kfuse::gui
