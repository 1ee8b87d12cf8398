#include "ptx_view.h"

#include <QDir>
#include <QFile>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QSplitter>
#include <QVBoxLayout>

#include "kfuse/gui/jobs.h"
#include "kfuse/gui/ptx_highlighter.h"
#include "kfuse/rewriter/rewrite.h"
#include "kfuse/rewriter/validate.h"

namespace kfuse::gui {

PtxView::PtxView(QWidget* parent) : QWidget(parent) {
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  members_ = new QPlainTextEdit(this);
  fused_ = new QPlainTextEdit(this);
  for (QPlainTextEdit* e : {members_, fused_}) {
    e->setReadOnly(true);
    e->setFont(mono);
    e->setLineWrapMode(QPlainTextEdit::NoWrap);
    new PtxHighlighter(e->document());
  }
  header_ = new QLabel(tr("Select a candidate to see its kernels' PTX."), this);
  header_->setWordWrap(true);
  result_ = new QLabel(this);
  result_->setWordWrap(true);
  result_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  rewrite_ = new QPushButton(tr("Rewrite"), this);
  rewrite_->setToolTip(tr("Fuse with the rewriter (as `kfuse rewrite`): fused PTX, ptxas resources, occupancy"));
  validate_ = new QPushButton(tr("Validate"), this);
  validate_->setToolTip(tr("Run the originals and the fused kernel on the emulator (as `kfuse validate`)"));
  validate_->setEnabled(false);
  rewrite_->setEnabled(false);
  connect(rewrite_, &QPushButton::clicked, this, &PtxView::rewrite);
  connect(validate_, &QPushButton::clicked, this, &PtxView::validate);

  auto* left = new QWidget(this);
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 0, 0);
  ll->addWidget(new QLabel(tr("<b>Member kernels</b> (from the trace's module images)"), left));
  ll->addWidget(members_);
  auto* right = new QWidget(this);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  rl->addWidget(new QLabel(tr("<b>Fused kernel</b> (rewriter output)"), right));
  rl->addWidget(fused_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(header_, 1);
  buttons->addWidget(rewrite_);
  buttons->addWidget(validate_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(buttons);
  layout->addWidget(split, 1);
  layout->addWidget(result_);
}

void PtxView::setSession(std::shared_ptr<const Session> session) {
  session_ = std::move(session);
  candidate_ = -1;
  ++generation_;
  members_->clear();
  fused_->clear();
  result_->clear();
  plan_.reset();
  rewrite_->setEnabled(false);
  validate_->setEnabled(false);
}

void PtxView::showCandidate(int index) {
  if (!session_ || index == candidate_) return;
  const analyzer::Candidate* c = session_->candidate(index);
  if (!c) return;
  candidate_ = index;
  ++generation_;  // a running job's result no longer applies
  plan_.reset();
  fused_->clear();
  result_->clear();
  QString text;
  bool all = true;
  for (size_t i = 0; i < c->function_ids.size(); ++i) {
    auto ptx = kernelPtx(session_->input.trace, c->function_ids[i]);
    text += QString("// ---- member %1: %2\n").arg(i + 1).arg(QString::fromStdString(c->names[i]));
    if (ptx.ok()) {
      text += QString::fromStdString(*ptx) + "\n";
    } else {
      all = false;
      text += "// " + QString::fromStdString(ptx.status().message()) + "\n\n";
    }
  }
  members_->setPlainText(text);
  const bool proven = c->legality == analyzer::Legality::kProven;
  header_->setText(tr("Candidate #%1 (%2, %3)%4")
                       .arg(c->rank)
                       .arg(analyzer::candidateKindName(c->kind))
                       .arg(analyzer::legalityName(c->legality))
                       .arg(!all      ? tr(": the trace has no PTX for some members, so it cannot be rewritten")
                            : !proven ? tr(": only proven candidates are rewritten")
                                      : QString()));
  rewrite_->setEnabled(all && proven && !busy_);
  validate_->setEnabled(false);
}

void PtxView::setBusy(bool busy, const QString& what) {
  busy_ = busy;
  rewrite_->setEnabled(!busy && candidate_ >= 0);
  validate_->setEnabled(!busy && plan_.has_value());
  if (busy) result_->setText(what);
}

void PtxView::rewrite() {
  const analyzer::Candidate* c = session_ ? session_->candidate(candidate_) : nullptr;
  if (!c || busy_) return;
  scratch_ = std::make_unique<QTemporaryDir>();
  if (!scratch_->isValid()) {
    result_->setText(tr("cannot create a scratch directory: %1").arg(scratch_->errorString()));
    return;
  }
  plan_dir_ = QDir(scratch_->path()).filePath("plan");
  setBusy(true, tr("Rewriting candidate #%1…").arg(c->rank));
  const int generation = ++generation_;
  struct Out {
    Expected<rewriter::Plan> plan = internalError("not run");
    std::string ptxas_log;
  };
  auto session = session_;
  const int index = candidate_;
  const std::string dir = plan_dir_.toStdString();
  runInBackground<Out>(
      this,
      [session, index, dir] {
        rewriter::RewriteOptions options;
        options.validate = false;
        rewriter::RewriteDiagnostics diag;
        Out o;
        o.plan = rewriter::rewriteCandidate(session->input, session->report, session->report.candidates[index], options,
                                            dir, &diag);
        o.ptxas_log = diag.ptxas_log;
        return o;
      },
      [this, generation](Out o) {
        busy_ = false;
        if (generation != generation_) {
          setBusy(false);
          return;
        }
        if (!o.plan.ok()) {
          plan_.reset();
          result_->setText(tr("Rewrite refused: %1").arg(QString::fromStdString(o.plan.status().message())) +
                           (o.ptxas_log.empty() ? QString() : "\n" + QString::fromStdString(o.ptxas_log)));
          setBusy(false);
          emit finished();
          return;
        }
        plan_ = std::move(o.plan).value();
        QFile f(QDir(plan_dir_).filePath(QString::fromStdString(plan_->fused.ptx_file)));
        if (f.open(QIODevice::ReadOnly)) fused_->setPlainText(QString::fromUtf8(f.readAll()));
        QStringList lines;
        // A horizontal fusion's layout, or the kind of a vertical fusion that is not thread-local.
        const char* layout = "";
        if (plan_->layout) {
          layout = rewriter::horizontalLayoutName(*plan_->layout);
        } else if (plan_->fusion != core::FusionKind::kThreadLocal) {
          layout = core::enumName(plan_->fusion);
        }
        lines << tr("Fused kernel %1 (%2 fusion%3), launch grid (%4,%5,%6) block (%7,%8,%9)")
                     .arg(QString::fromStdString(plan_->fused.name))
                     .arg(QString::fromUtf8(core::fusionDirection(plan_->fusion)))
                     .arg(*layout ? ", " + QString::fromUtf8(layout) + " layout" : QString())
                     .arg(plan_->fused.shape.grid.x)
                     .arg(plan_->fused.shape.grid.y)
                     .arg(plan_->fused.shape.grid.z)
                     .arg(plan_->fused.shape.block.x)
                     .arg(plan_->fused.shape.block.y)
                     .arg(plan_->fused.shape.block.z);
        QStringList parts;
        for (const auto& p : plan_->fused.parts) {
          parts << tr("member %1 → blocks [%2, %3), threads [%4, %5)")
                       .arg(p.kernel + 1)
                       .arg(p.first_block)
                       .arg(p.first_block + p.blocks)
                       .arg(p.first_thread)
                       .arg(p.first_thread + p.threads);
        }
        if (!parts.isEmpty()) {
          lines << tr("Correspondence: ") + parts.join("; ");
        } else {
          lines << tr(
              "Correspondence: every thread runs the members in order; member N's registers are renamed "
              "%k<N-1>_… in the fused kernel");
        }
        for (const rewriter::KernelResources& r : plan_->resources) {
          lines << tr("%1 on %2: %3 registers, %4 B shared, %5 B spilled, occupancy %6 % (limited by %7)")
                       .arg(QString::fromStdString(analyzer::shortKernelName(r.kernel, 40)))
                       .arg(QString::fromStdString(r.arch))
                       .arg(r.registers)
                       .arg(r.static_shared_bytes)
                       .arg(r.spill_store_bytes + r.spill_load_bytes)
                       .arg(100.0 * r.occupancy, 0, 'f', 0)
                       .arg(QString::fromUtf8(r.occupancy_limiter ? core::enumName(*r.occupancy_limiter) : ""));
        }
        lines << tr("Predicted saving %1 µs per occurrence on %2")
                     .arg(plan_->prediction.saving_ns / 1000.0, 0, 'f', 2)
                     .arg(QString::fromStdString(plan_->prediction.gpu));
        result_->setText(lines.join('\n'));
        setBusy(false);
        emit finished();
      });
}

void PtxView::validate() {
  if (!plan_ || busy_) return;
  setBusy(true, tr("Validating on the emulator…"));
  const int generation = generation_;
  auto plan = std::make_shared<const rewriter::Plan>(*plan_);
  const std::string dir = plan_dir_.toStdString();
  runInBackground<Expected<rewriter::ValidationResult>>(
      this,
      [plan, dir] {
        rewriter::ValidationOptions options;
        return rewriter::validatePlan(*plan, dir, options);
      },
      [this, generation](Expected<rewriter::ValidationResult> r) {
        busy_ = false;
        if (generation != generation_) {
          setBusy(false);
          return;
        }
        QString text = result_->text() + "\n";
        if (!r.ok()) {
          text += tr("Validation could not run: %1").arg(QString::fromStdString(r.status().message()));
        } else if (r->passed) {
          text += tr("Validation PASSED on the emulator: %1 runs, outputs bit-identical (%2 s)")
                      .arg(r->runs)
                      .arg(r->seconds, 0, 'f', 1);
        } else {
          text += tr("Validation FAILED: %1")
                      .arg(r->mismatch ? QString::fromStdString(r->mismatch->sentence())
                                       : QString::fromStdString(r->failure));
        }
        result_->setText(text);
        setBusy(false);
        emit finished();
      });
}

}  // namespace kfuse::gui
