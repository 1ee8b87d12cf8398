#include "main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPointer>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QThread>
#include <QVBoxLayout>

#include <set>

#include "kfuse/core/cancel.h"
#include "kfuse/core/gpu_spec.h"
#include "kfuse/rewriter/rewrite.h"

namespace kfuse::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("kfuse-gui");
  setAcceptDrops(true);
  loader_ = new SessionLoader(this);
  selection_ = new Selection(this);
  model_ = new CandidatesModel(this);
  detail_ = new DetailModel(this);
  reviews_ = new ReviewBook(this);

  panel_ = new CandidatePanel(model_, this);
  timeline_ = new TimelineWidget(this);
  graph_ = new GraphView(this);
  roofline_ = new RooflineView(this);
  ptx_ = new PtxView(this);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(timeline_, tr("Timeline"));
  tabs_->addTab(graph_, tr("Dependency graph"));
  tabs_->addTab(roofline_, tr("Roofline"));
  tabs_->addTab(ptx_, tr("PTX"));

  detail_view_ = new QTreeView(this);
  detail_view_->setModel(detail_);
  detail_view_->setAlternatingRowColors(true);
  detail_view_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  detail_view_->setWordWrap(true);
  gpu_ = new QComboBox(this);
  gpu_->setToolTip(tr("Cost the candidates for another GPU of kfuse's spec table"));
  for (const core::GpuSpec& g : core::gpuSpecs()) {
    gpu_->addItem(QString::fromStdString(g.marketing_name), QString::fromStdString(g.short_name));
  }
  decision_ = new QLabel(this);
  note_ = new QLineEdit(this);
  note_->setPlaceholderText(tr("note (why)"));
  accept_ = new QPushButton(tr("Accept"), this);
  accept_->setToolTip(
      tr("Accept the selected candidates (Ctrl/Shift+click selects several); refused when one shares "
         "a launch with an accepted candidate or with another selected one"));
  reject_ = new QPushButton(tr("Reject"), this);
  reject_->setToolTip(tr("Reject the selected candidates"));
  export_ = new QPushButton(tr("Export accepted plans…"), this);
  export_->setToolTip(
      tr("Write the accepted candidates' plans for `kfuse run --plan` (as `kfuse rewrite`, validated "
         "on the emulator)"));

  banner_ = new QLabel(this);
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->setMargin(6);
  banner_->hide();

  auto* detail_box = new QWidget(this);
  auto* dl = new QVBoxLayout(detail_box);
  dl->setContentsMargins(0, 0, 0, 0);
  auto* gpu_row = new QHBoxLayout;
  gpu_row->addWidget(new QLabel(tr("Cost for:"), detail_box));
  gpu_row->addWidget(gpu_, 1);
  dl->addLayout(gpu_row);
  dl->addWidget(detail_view_, 1);
  auto* review_row = new QHBoxLayout;
  review_row->addWidget(decision_);
  review_row->addWidget(note_, 1);
  review_row->addWidget(accept_);
  review_row->addWidget(reject_);
  review_row->addWidget(export_);
  dl->addLayout(review_row);

  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(tabs_);
  right->addWidget(detail_box);
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 2);
  auto* main = new QSplitter(Qt::Horizontal, this);
  main->addWidget(panel_);
  main->addWidget(right);
  main->setStretchFactor(0, 2);
  main->setStretchFactor(1, 3);
  auto* central = new QWidget(this);
  auto* cl = new QVBoxLayout(central);
  cl->setContentsMargins(4, 4, 4, 4);
  cl->addWidget(banner_);
  cl->addWidget(main, 1);
  setCentralWidget(central);

  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(240);
  progress_->hide();
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->hide();
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  buildMenus();

  connect(loader_, &SessionLoader::progress, this, [this](int pct, const QString& stage) {
    progress_->setValue(pct);
    statusBar()->showMessage(stage + "…");
  });
  connect(loader_, &SessionLoader::loaded, this, &MainWindow::sessionLoaded);
  connect(loader_, &SessionLoader::failed, this, &MainWindow::loadFailed);
  connect(loader_, &SessionLoader::cancelled, this, [this] {
    progress_->hide();
    cancel_->hide();
    statusBar()->showMessage(tr("Opening cancelled"), 5000);
  });
  connect(cancel_, &QPushButton::clicked, this, [this] {
    if (export_cancel_) {
      export_cancel_->store(true);
      statusBar()->showMessage(tr("Cancelling the export after the plan being written…"));
    } else {
      loader_->cancel();
    }
  });

  // Selection linking: every view sets the shared selection and follows it.
  connect(panel_, &CandidatePanel::candidatePicked, this, [this](int index) {
    const analyzer::Candidate* c = session_ ? session_->candidate(index) : nullptr;
    selection_->setCandidate(index);
    if (c && !c->inGraphs() && !c->occurrence_launches.empty() && !c->occurrence_launches.front().empty()) {
      selection_->setLaunch(c->occurrence_launches.front().front());
    }
    timeline_->showCandidate(index);
  });
  connect(timeline_, &TimelineWidget::launchClicked, this, [this](core::Id launch, int candidate) {
    selection_->setCandidate(candidate);
    selection_->setLaunch(launch);
  });
  connect(timeline_, &TimelineWidget::operatorClicked, this, [this](int candidate) {
    const analyzer::Candidate* c = session_ ? session_->candidate(candidate) : nullptr;
    selection_->setCandidate(candidate);
    if (c && !c->occurrence_launches.empty() && !c->occurrence_launches.front().empty()) {
      selection_->setLaunch(c->occurrence_launches.front().front());
    }
  });
  connect(graph_, &GraphView::launchClicked, this, [this](core::Id launch) {
    if (!session_) return;
    auto it = session_->timeline.by_launch.find(launch);
    if (it != session_->timeline.by_launch.end()) {
      selection_->setCandidate(session_->timeline.slice(it->second).candidate);
    }
    selection_->setLaunch(launch);
  });
  connect(graph_, &GraphView::windowRequested, this, [this] {
    graph_->showWindow(static_cast<int64_t>(timeline_->window().t0), static_cast<int64_t>(timeline_->window().t1));
  });
  connect(selection_, &Selection::candidateChanged, this, &MainWindow::candidateSelected);
  connect(selection_, &Selection::launchChanged, this, &MainWindow::launchSelected);
  connect(gpu_, &QComboBox::currentIndexChanged, this, &MainWindow::gpuChanged);
  connect(accept_, &QPushButton::clicked, this, [this] {
    const QString e = decide(core::ReviewVerdict::kAccepted);
    if (!e.isEmpty()) showBanner(e, true);
  });
  connect(reject_, &QPushButton::clicked, this, [this] {
    const QString e = decide(core::ReviewVerdict::kRejected);
    if (!e.isEmpty()) showBanner(e, true);
  });
  connect(export_, &QPushButton::clicked, this, &MainWindow::exportPlansDialog);
  connect(panel_, &CandidatePanel::selectionChanged, this, &MainWindow::refreshReviewBox);
  connect(reviews_, &ReviewBook::changed, this, [this] {
    model_->setDecisions(reviews_->decisions());
    refreshReviewBox();
  });
  refreshReviewBox();
  resize(1500, 900);
}

MainWindow::~MainWindow() {
  waitForBackground();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open…"), QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open a trace"), QString(), tr("Traces (*.sqlite *.db *.kfuse *.json *.json.gz *.gz);;All files (*)"));
    if (!path.isEmpty()) openFile(path);
  });
  recent_menu_ = file->addMenu(tr("Open &recent"));
  rebuildRecentMenu();
  file->addAction(tr("&Save as kfuse trace…"), this, &MainWindow::saveAsKfuse);
  file->addAction(tr("&Export accepted plans…"), this, &MainWindow::exportPlansDialog);
  file->addAction(tr("&Compare with…"), this, &MainWindow::compareDialog);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Fit timeline"), this, [this] { timeline_->fit(); });
}

void MainWindow::compareDialog() {
  const QString filter = tr("Traces (*.sqlite *.db *.kfuse *.json *.json.gz *.gz);;All files (*)");
  QString before = session_ ? QString::fromStdString(session_->path) : QString();
  if (before.isEmpty()) {
    before = QFileDialog::getOpenFileName(this, tr("Compare: the trace before"), QString(), filter);
    if (before.isEmpty()) return;
  }
  const QString after = QFileDialog::getOpenFileName(
      this, tr("Compare %1 with the trace after").arg(QFileInfo(before).fileName()), QFileInfo(before).path(), filter);
  if (!after.isEmpty()) compare(before, after);
}

CompareWindow* MainWindow::compare(const QString& before, const QString& after) {
  auto* window = new CompareWindow(this);
  window->setAttribute(Qt::WA_DeleteOnClose);
  window->show();
  window->open(before, after);
  return window;
}

QStringList MainWindow::recentFiles() const {
  return QSettings().value("recentFiles").toStringList();
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList files = settings.value("recentFiles").toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  files.removeAll(abs);
  files.prepend(abs);
  while (files.size() > 10) files.removeLast();
  settings.setValue("recentFiles", files);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  for (const QString& f : recentFiles()) {
    recent_menu_->addAction(f, this, [this, f] { openFile(f); });
  }
  recent_menu_->setEnabled(!recent_menu_->isEmpty());
}

void MainWindow::showBanner(const QString& text, bool error) {
  banner_->setText(text);
  banner_->setStyleSheet(error ? "background:#fde2e1; color:#7a1010; border:1px solid #e0a0a0;"
                               : "background:#e6f1fb; color:#10365a; border:1px solid #a0c0e0;");
  banner_->setVisible(!text.isEmpty());
}

void MainWindow::openFile(const QString& path) {
  showBanner({}, false);
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->show();
  cancel_->show();
  statusBar()->showMessage(tr("Opening %1…").arg(path));
  loader_->load(path);
}

void MainWindow::waitForLoad() {
  loader_->wait();
  QApplication::processEvents();
}

void MainWindow::waitForBackground() {
  while (background_jobs_ > 0) {
    QThread::msleep(5);
    QApplication::processEvents();
  }
}

void MainWindow::loadFailed(const QString& path, const QString& message) {
  progress_->hide();
  cancel_->hide();
  statusBar()->showMessage(tr("Could not open %1").arg(path), 10000);
  showBanner(tr("Could not open the trace: %1").arg(message), true);
}

void MainWindow::sessionLoaded(std::shared_ptr<const Session> session) {
  progress_->hide();
  cancel_->hide();
  session_ = std::move(session);
  gpu_report_.reset();
  selection_->clear();
  model_->setSession(session_);
  timeline_->setSession(session_);
  graph_->setSession(session_);
  roofline_->setSession(session_);
  ptx_->setSession(session_);
  const QString review_error = reviews_->setSession(session_);
  detail_->setTree({});
  {
    const QSignalBlocker block(gpu_);
    const int i = gpu_->findData(QString::fromStdString(session_->report.gpu.short_name));
    gpu_->setCurrentIndex(i);
  }
  addRecent(QString::fromStdString(session_->path));
  setWindowTitle(QString("kfuse-gui — %1").arg(QFileInfo(QString::fromStdString(session_->path)).fileName()));
  const analyzer::Report& r = session_->report;
  const TimelineData& t = session_->timeline;
  QString info = tr("%1 (%2): %3 kernels, %4 copies, %5 sets, %6 ranges/CPU ops on %7 lanes; %8 candidates; "
                    "GPU %9 (%10)")
                     .arg(QString::fromStdString(session_->path))
                     .arg(QString::fromStdString(session_->input.format))
                     .arg(t.kernels)
                     .arg(t.copies)
                     .arg(t.sets)
                     .arg(t.ranges + t.cpu_ops)
                     .arg(t.lanes.size())
                     .arg(r.candidates.size())
                     .arg(QString::fromStdString(r.gpu.short_name))
                     .arg(QString::fromStdString(r.gpu_source));
  statusBar()->showMessage(info);
  if (!review_error.isEmpty()) {
    showBanner(tr("Review decisions could not be read: %1").arg(review_error), true);
  } else if (r.candidates.empty() && !r.why_none.empty()) {
    QStringList why;
    for (const std::string& s : r.why_none) why << QString::fromStdString(s);
    showBanner(tr("No fusion candidates: %1").arg(why.join(" ")), false);
  } else if (!session_->isKfuseTrace()) {
    showBanner(tr("An imported %1 trace: review decisions need a kfuse trace (File → Save as kfuse trace).")
                   .arg(QString::fromStdString(session_->input.format)),
               false);
  }
  // The dependency graph for the graph view, off the UI thread.
  ++background_jobs_;
  auto s = session_;
  runInBackground<std::shared_ptr<const DependencyContext>>(
      this, [s] { return std::make_shared<const DependencyContext>(buildDependencyContext(s->input.trace)); },
      [this, s](std::shared_ptr<const DependencyContext> c) {
        --background_jobs_;
        if (s == session_) graph_->setContext(std::move(c));
      });
  if (!r.candidates.empty()) {
    selection_->setCandidate(0);  // the best candidate, as `kfuse analyze` lists it first
    panel_->selectCandidate(0);
  }
}

void MainWindow::candidateSelected(int index) {
  panel_->selectCandidate(index);
  timeline_->setHighlight(index, selection_->launch());
  graph_->showCandidate(index);
  roofline_->showCandidate(index);
  ptx_->showCandidate(index);
  refreshDetail();
  refreshReviewBox();
}

void MainWindow::launchSelected(core::Id id) {
  timeline_->setHighlight(selection_->candidate(), id);
  if (selection_->candidate() < 0) refreshDetail();
}

void MainWindow::refreshDetail() {
  if (!session_) return;
  const int index = selection_->candidate();
  const analyzer::Report& report = gpu_report_ ? *gpu_report_ : session_->report;
  if (index >= 0 && static_cast<size_t>(index) < report.candidates.size()) {
    detail_->setTree(candidateDetail(*session_, report, report.candidates[static_cast<size_t>(index)]));
  } else if (selection_->launch() != core::kNoId) {
    detail_->setTree(launchDetail(*session_, selection_->launch()));
  } else {
    detail_->setTree({});
  }
  detail_view_->expandAll();
}

void MainWindow::refreshReviewBox() {
  const int index = selection_->candidate();
  const bool can = session_ && session_->candidate(index) && session_->isKfuseTrace();
  accept_->setEnabled(can);
  reject_->setEnabled(can);
  note_->setEnabled(can);
  export_->setEnabled(session_ && !reviews_->accepted().empty() && !export_cancel_);
  // Accept and Reject act on the table's selected rows: named here when they are not just the candidate shown.
  const std::vector<int> selected = panel_->selectedCandidates();
  const core::ReviewDecision* d = reviews_->decisionFor(index);
  if (!selected.empty() && selected != std::vector<int>{index}) {
    QStringList ranks;
    for (int i : selected) ranks << QString("#%1").arg(session_->report.candidates[static_cast<size_t>(i)].rank);
    decision_->setText(tr("<b>%n selected</b>", nullptr, static_cast<int>(selected.size())));
    decision_->setToolTip(tr("Accept or Reject decides on %1 together, with the same note").arg(ranks.join(", ")));
    accept_->setEnabled(session_ && session_->isKfuseTrace());
    reject_->setEnabled(accept_->isEnabled());
    note_->setEnabled(accept_->isEnabled());
  } else if (d) {
    decision_->setText(tr("<b>%1</b>").arg(core::reviewVerdictName(d->verdict)));
    decision_->setToolTip(QString::fromStdString(d->note));
    if (!note_->hasFocus()) note_->setText(QString::fromStdString(d->note));
  } else {
    decision_->setText(session_ && session_->candidate(index) ? tr("not reviewed") : QString());
    if (!note_->hasFocus()) note_->clear();
  }
}

QString MainWindow::decide(core::ReviewVerdict verdict) {
  std::vector<int> indices = panel_->selectedCandidates();
  if (indices.empty()) indices = {selection_->candidate()};
  const QString error = reviews_->decide(indices, verdict, note_->text());
  if (error.isEmpty()) {
    statusBar()->showMessage(tr("%1 candidate(s) %2").arg(indices.size()).arg(core::reviewVerdictName(verdict)), 5000);
  }
  return error;
}

void MainWindow::gpuChanged(int) {
  if (!session_) return;
  const std::string gpu = gpu_->currentData().toString().toStdString();
  const int generation = ++gpu_generation_;
  ++background_jobs_;
  statusBar()->showMessage(tr("Costing for %1…").arg(gpu_->currentText()));
  auto s = session_;
  runInBackground<Expected<analyzer::Report>>(
      this, [s, gpu] { return analyzeForGpu(*s, gpu); },
      [this, s, generation](Expected<analyzer::Report> r) {
        --background_jobs_;
        if (s != session_ || generation != gpu_generation_) return;
        if (!r.ok()) {
          showBanner(QString::fromStdString(r.status().message()), true);
          return;
        }
        gpu_report_ = std::make_unique<analyzer::Report>(std::move(r).value());
        model_->setReport(*gpu_report_);
        roofline_->setReport(*gpu_report_);
        refreshDetail();
        statusBar()->showMessage(tr("Costs for %1").arg(QString::fromStdString(gpu_report_->gpu.marketing_name)));
      });
}

void MainWindow::saveAsKfuse() {
  if (!session_) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save as kfuse trace"),
                                                    QString::fromStdString(session_->path) + ".kfuse.sqlite");
  if (path.isEmpty()) return;
  const Status s = saveAsKfuseTrace(*session_, path.toStdString());
  if (!s.ok()) {
    showBanner(QString::fromStdString(s.message()), true);
    return;
  }
  openFile(path);
}

void MainWindow::exportPlansDialog() {
  if (!session_) return;
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Export plans into"));
  if (dir.isEmpty()) return;
  exportPlans(
      dir, [this](const QStringList& lines) { QMessageBox::information(this, tr("Export plans"), lines.join('\n')); });
}

namespace {

// Why plans cannot be exported into `dir`: it holds a candidate-RANK directory of a candidate that is not accepted
// (an earlier export), so that it would not hold exactly the accepted set. Empty when it can.
QString staleCandidateDirs(const QString& dir, const Session& s, const std::vector<int>& accepted) {
  std::set<QString> wanted;
  for (int index : accepted)
    wanted.insert(QString("candidate-%1").arg(s.report.candidates[static_cast<size_t>(index)].rank));
  QStringList stale;
  for (const QString& entry : QDir(dir).entryList({"candidate-*"}, QDir::Dirs | QDir::NoDotAndDotDot)) {
    if (!wanted.count(entry)) stale << entry;
  }
  if (stale.isEmpty()) return {};
  return QObject::tr(
             "Plans not exported: %1 already holds %2, which %3 not accepted; choose another directory (or "
             "remove it) so that it holds exactly the accepted plans.")
      .arg(dir, stale.join(", "), stale.size() == 1 ? QObject::tr("is") : QObject::tr("are"));
}

}  // namespace

void MainWindow::exportPlans(const QString& dir, std::function<void(QStringList)> done) {
  if (!session_) return;
  const std::vector<int> accepted = reviews_->accepted();
  QString refused;
  if (accepted.empty()) refused = tr("No candidate is accepted.");
  if (export_cancel_) refused = tr("Plans are being exported already.");
  if (const std::vector<ReviewConflict> conflicts = reviews_->acceptedSetConflicts(); !conflicts.empty()) {
    QStringList lines = {
        tr("Plans not exported: the accepted candidates are not a consistent set (a launch can "
           "belong to one fusion only); reject one of each pair first.")};
    for (const ReviewConflict& c : conflicts) lines << c.reason;
    refused = lines.join('\n');
  }
  if (refused.isEmpty()) refused = staleCandidateDirs(dir, *session_, accepted);
  if (!refused.isEmpty()) {
    showBanner(refused, true);
    if (done) done({refused});
    return;
  }
  ++background_jobs_;
  export_cancel_ = std::make_shared<std::atomic<bool>>(false);
  progress_->setRange(0, static_cast<int>(accepted.size()));
  progress_->setValue(0);
  progress_->show();
  cancel_->show();
  refreshReviewBox();
  statusBar()->showMessage(tr("Writing %1 plans…").arg(accepted.size()));
  auto s = session_;
  auto cancel = export_cancel_;
  const std::string out = dir.toStdString();
  // Progress lines from the worker, shown on the UI thread while the window lives.
  auto report = [window = QPointer<MainWindow>(this)](int written, const QString& line) {
    if (!window) return;
    QMetaObject::invokeMethod(
        window.data(),
        [window, written, line] {
          if (!window || !window->export_cancel_) return;
          window->progress_->setValue(written);
          window->statusBar()->showMessage(line);
        },
        Qt::QueuedConnection);
  };
  runInBackground<QStringList>(
      this,
      [s, accepted, out, cancel, report] {
        const core::CancelScope scope(cancel.get());
        QStringList lines;
        QDir().mkpath(QString::fromStdString(out));
        for (size_t k = 0; k < accepted.size(); ++k) {
          const analyzer::Candidate& c = s->report.candidates[static_cast<size_t>(accepted[k])];
          if (core::cancelRequested()) {
            lines << QString("#%1: not written: the export was cancelled").arg(c.rank);
            continue;
          }
          const std::string plan_dir = out + "/candidate-" + std::to_string(c.rank);
          rewriter::RewriteOptions options;  // as `kfuse rewrite`: validated on the emulator
          const int written = static_cast<int>(k);
          const QString head = QString("Plan %1 of %2 (#%3): ").arg(k + 1).arg(accepted.size()).arg(c.rank);
          options.progress = [report, written, head](const std::string& line) {
            report(written, head + QString::fromStdString(line));
          };
          rewriter::RewriteDiagnostics diag;
          auto plan = rewriter::rewriteCandidate(s->input, s->report, c, options, plan_dir, &diag);
          if (!plan.ok()) {
            lines << QString("#%1: not written: %2").arg(c.rank).arg(QString::fromStdString(plan.status().message()));
          } else {
            lines << QString("#%1: %2 (emulator validation %3)")
                         .arg(c.rank)
                         .arg(QString::fromStdString(plan_dir))
                         .arg(QString::fromUtf8(core::enumName(plan->validation.emulator)));
          }
        }
        return lines;
      },
      [this, done](QStringList lines) {
        --background_jobs_;
        const bool cancelled = export_cancel_ && export_cancel_->load();
        export_cancel_.reset();
        progress_->hide();
        cancel_->hide();
        refreshReviewBox();
        statusBar()->showMessage(cancelled ? tr("Export cancelled") : tr("Plans written"), 5000);
        showBanner(lines.join("\n"), false);
        if (done) done(lines);
      });
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls() && !e->mimeData()->urls().isEmpty() && e->mimeData()->urls().front().isLocalFile()) {
    e->acceptProposedAction();
  }
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) openFile(urls.front().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  loader_->cancel();
  if (export_cancel_) export_cancel_->store(true);  // stops after the plan being written
  e->accept();
}

}  // namespace kfuse::gui
