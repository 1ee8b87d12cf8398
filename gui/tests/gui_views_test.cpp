// The views on the offscreen platform: selection linking between table, timeline, detail, graph, roofline and PTX;
// filtering through the filter bar; review decisions persisted in the trace and reloaded by a new window; export
// of accepted plans; import errors shown in the window; drag and drop; zoom.
#include <QMimeData>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <QUrl>

#include "kfuse/rewriter/plan.h"
#include "main_window.h"
#include "test_support.h"

using namespace kfuse;
using namespace kfuse::gui;
using kfuse::gui::testing::emulatorTrace;
using kfuse::gui::testing::sharedTrace;

namespace {

void open(MainWindow& w, const QString& path) {
  w.openFile(path);
  w.waitForLoad();
  w.waitForBackground();
}

bool waitFor(const std::function<bool()>& done, int ms = 300'000) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QTest::qWait(20);
  return done();
}

}  // namespace

class GuiViewsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // Every real trace of ../shared/data opens and every view paints it (or the window shows why it cannot be opened:
  // the CPU-only profile and the Execution Trace, which is not a Kineto trace).
  void everySharedTraceOpensInEveryView_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<bool>("opens");
    for (const char* sub : {"kineto", "nsys"}) {
      const QDir dir(sharedTrace(sub));
      for (const QString& f : dir.entryList(QDir::Files, QDir::Name)) {
        const bool opens = !f.contains("cpu_only") && !f.endsWith("_et.json.gz");
        QTest::newRow(qPrintable(f)) << dir.filePath(f) << opens;
      }
    }
  }

  void everySharedTraceOpensInEveryView() {
    QFETCH(QString, path);
    QFETCH(bool, opens);
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    open(w, path);
    if (!opens) {
      QVERIFY(!w.session());
      QVERIFY2(w.bannerText().contains(path), qPrintable(w.bannerText()));
      return;
    }
    QVERIFY2(w.session(), qPrintable(w.bannerText()));
    QVERIFY(w.session()->timeline.kernels > 0);
    const int candidates = static_cast<int>(w.session()->report.candidates.size());
    for (int c = 0; c < std::min(candidates, 3); ++c) {
      w.selection()->setCandidate(c);
      for (int tab = 0; tab < w.tabs()->count(); ++tab) {
        w.tabs()->setCurrentIndex(tab);
        QVERIFY(!w.grab().isNull());
      }
      QCOMPARE(w.detailModel()->index(0, 0).data().toString(),
               QString("Candidate #%1").arg(w.session()->report.candidates[static_cast<size_t>(c)].rank));
    }
    w.timeline()->fit();
    QVERIFY(!w.timeline()->grab().isNull());
  }

  void pickingACandidateHighlightsItEverywhere() {
    MainWindow w;
    w.show();
    open(w, sharedTrace("kineto/hta_six_streams_rank0.json.gz"));
    QVERIFY(w.session());
    const auto& cands = w.session()->report.candidates;
    QVERIFY(cands.size() >= 3);
    // The best candidate is selected on open.
    QCOMPARE(w.selection()->candidate(), 0);
    // Pick the third row of the table (sorted by rank).
    QTableView* table = w.candidates()->table();
    const QModelIndex row = w.candidates()->filter()->index(2, 0);
    const int index = row.data(CandidatesModel::CandidateIndexRole).toInt();
    table->selectionModel()->setCurrentIndex(row, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QCOMPARE(w.selection()->candidate(), index);
    QCOMPARE(w.timeline()->highlight().candidate, index);
    QCOMPARE(w.selection()->launch(), cands[static_cast<size_t>(index)].occurrence_launches.front().front());
    // The timeline shows the first occurrence.
    const QPoint p = w.timeline()->pointOf(w.selection()->launch());
    QVERIFY(w.timeline()->rect().contains(p));
    // The detail is the candidate's.
    QCOMPARE(w.detailModel()->index(0, 0).data().toString(), QString("Candidate #%1").arg(cands[index].rank));
    // The graph view centres on it once the dependency graph is built.
    QVERIFY(waitFor([&] { return w.graph()->hasContext(); }));
    size_t members = 0;
    for (const GraphNode& n : w.graph()->layout().nodes) members += n.member;
    QCOMPARE(members, cands[static_cast<size_t>(index)].occurrences.front().size());
  }

  void clickingAKernelOnTheTimelineSelectsItsCandidate() {
    MainWindow w;
    w.show();
    open(w, emulatorTrace());
    const auto& cands = w.session()->report.candidates;
    QVERIFY(!cands.empty());
    // Select the last candidate through the timeline: click one of its kernels.
    const int index = static_cast<int>(cands.size()) - 1;
    const core::Id launch = cands.back().occurrence_launches.back().back();
    const int marked = w.session()->timeline.slice(w.session()->timeline.by_launch.at(launch)).candidate;
    w.timeline()->showCandidate(index);
    // Zoom on the launch itself.
    const Slice& s = w.session()->timeline.slice(w.session()->timeline.by_launch.at(launch));
    w.timeline()->setWindow({static_cast<double>(s.start) - 2 * static_cast<double>(s.end - s.start + 1),
                             static_cast<double>(s.end) + 2 * static_cast<double>(s.end - s.start + 1),
                             w.timeline()->window().scroll_y});
    const QPoint p = w.timeline()->pointOf(launch);
    QVERIFY(w.timeline()->rect().contains(p));
    QTest::mouseClick(w.timeline(), Qt::LeftButton, {}, p);
    QCOMPARE(w.selection()->launch(), launch);
    QCOMPARE(w.selection()->candidate(), marked);
    QCOMPARE(w.candidates()->selectedCandidate(), marked);
    QCOMPARE(w.timeline()->highlight().launch, launch);
  }

  void theFilterBarFiltersTheTable() {
    MainWindow w;
    w.show();
    open(w, sharedTrace("kineto/hta_six_streams_rank0.json.gz"));
    CandidatePanel* panel = w.candidates();
    const int all = panel->filter()->rowCount();
    QVERIFY(all > 2);
    panel->kindBox()->setCurrentIndex(2);  // horizontal
    int horizontal = 0;
    for (const auto& c : w.session()->report.candidates) horizontal += c.kind == analyzer::CandidateKind::kHorizontal;
    QCOMPARE(panel->filter()->rowCount(), horizontal);
    panel->kindBox()->setCurrentIndex(0);
    panel->legalityBox(analyzer::Legality::kProven)->setChecked(false);
    panel->legalityBox(analyzer::Legality::kLikely)->setChecked(false);
    panel->legalityBox(analyzer::Legality::kBlocked)->setChecked(false);
    QCOMPARE(panel->filter()->rowCount(), 0);
    for (auto l : {analyzer::Legality::kProven, analyzer::Legality::kLikely, analyzer::Legality::kBlocked}) {
      panel->legalityBox(l)->setChecked(true);
    }
    QCOMPARE(panel->filter()->rowCount(), all);
    QTest::keyClicks(panel->nameEdit(), "no-kernel-is-called-this");
    QCOMPARE(panel->filter()->rowCount(), 0);
    panel->nameEdit()->clear();
    panel->occurrencesSpin()->setValue(1'000'000);
    QCOMPARE(panel->filter()->rowCount(), 0);
  }

  void reviewDecisionsArePersistedAndReloaded() {
    QTemporaryDir dir;
    const QString copy = testing::scratchCopy(dir, emulatorTrace());
    {
      MainWindow w;
      w.show();
      open(w, copy);
      QVERIFY(w.acceptButton()->isEnabled());
      w.selection()->setCandidate(0);
      w.noteEdit()->setText("chain of elementwise kernels; fuse");
      QTest::mouseClick(w.acceptButton(), Qt::LeftButton);
      QCOMPARE(w.bannerText(), QString());
      const QModelIndex review = w.candidatesModel()->index(0, w.candidatesModel()->reviewColumn());
      QCOMPARE(review.data().toString(), QString("accepted"));
      if (w.session()->report.candidates.size() > 1) {
        w.selection()->setCandidate(1);
        w.noteEdit()->setText("not now");
        QTest::mouseClick(w.rejectButton(), Qt::LeftButton);
      }
    }
    MainWindow again;
    again.show();
    open(again, copy);
    const QModelIndex review = again.candidatesModel()->index(0, again.candidatesModel()->reviewColumn());
    QCOMPARE(review.data().toString(), QString("accepted"));
    QCOMPARE(review.data(Qt::ToolTipRole).toString(), QString("chain of elementwise kernels; fuse"));
    again.selection()->setCandidate(0);
    QCOMPARE(again.noteEdit()->text(), QString("chain of elementwise kernels; fuse"));
    if (again.session()->report.candidates.size() > 1) {
      QCOMPARE(again.candidatesModel()->index(1, again.candidatesModel()->reviewColumn()).data().toString(),
               QString("rejected"));
    }
    // The recent-files list has it first.
    QCOMPARE(again.recentFiles().value(0), QFileInfo(copy).absoluteFilePath());
  }

  void exportPlansWritesAPlanPerAcceptedCandidate() {
    QTemporaryDir dir;
    const QString copy = testing::scratchCopy(dir, emulatorTrace());
    MainWindow w;
    w.show();
    open(w, copy);
    int proven = -1;
    const auto& cands = w.session()->report.candidates;
    for (size_t i = 0; i < cands.size() && proven < 0; ++i) {
      if (cands[i].legality == analyzer::Legality::kProven) proven = static_cast<int>(i);
    }
    QVERIFY(proven >= 0);
    w.selection()->setCandidate(proven);
    QCOMPARE(w.decide(core::ReviewVerdict::kAccepted), QString());
    QStringList lines;
    bool done = false;
    w.exportPlans(dir.filePath("plans"), [&](QStringList l) {
      lines = l;
      done = true;
    });
    QVERIFY(waitFor([&] { return done; }));
    QCOMPARE(lines.size(), 1);
    const QString plan_dir = dir.filePath(QString("plans/candidate-%1").arg(cands[proven].rank));
    QVERIFY2(QFileInfo::exists(plan_dir + "/plan.json"), qPrintable(lines.join('\n')));
    auto plan = rewriter::readPlan(plan_dir.toStdString());
    QVERIFY(plan.ok());
    QCOMPARE(plan->candidate_rank, cands[proven].rank);
    QCOMPARE(QString::fromUtf8(core::enumName(plan->validation.emulator)), QString("passed"));
  }

  void ptxViewRewritesAndValidatesInTheBackground() {
    MainWindow w;
    w.show();
    open(w, emulatorTrace());
    int proven = -1;
    const auto& cands = w.session()->report.candidates;
    for (size_t i = 0; i < cands.size() && proven < 0; ++i) {
      if (cands[i].legality == analyzer::Legality::kProven) proven = static_cast<int>(i);
    }
    QVERIFY(proven >= 0);
    w.selection()->setCandidate(proven);
    QVERIFY(w.ptx()->membersText().contains(".entry"));
    QSignalSpy finished(w.ptx(), &PtxView::finished);
    w.ptx()->rewrite();
    QVERIFY(w.ptx()->busy());
    QVERIFY(waitFor([&] { return finished.count() == 1; }));
    QVERIFY2(w.ptx()->fusedText().contains(".entry"), qPrintable(w.ptx()->resultText()));
    QVERIFY(w.ptx()->resultText().contains("occupancy"));
    w.ptx()->validate();
    QVERIFY(waitFor([&] { return finished.count() == 2; }));
    QVERIFY2(w.ptx()->resultText().contains("PASSED"), qPrintable(w.ptx()->resultText()));
  }

  void theRooflineJoinsMembersToThePrediction() {
    MainWindow w;
    w.show();
    open(w, emulatorTrace());
    const auto& cands = w.session()->report.candidates;
    int with_point = -1;
    for (size_t i = 0; i < cands.size() && with_point < 0; ++i) {
      if (cands[i].cost.flops > 0 && cands[i].cost.bytes_after > 0 && cands[i].cost.fused_ns > 0) {
        with_point = static_cast<int>(i);
      }
    }
    if (with_point < 0) QSKIP("no candidate of the recording has a FLOP count");
    w.selection()->setCandidate(with_point);
    QVERIFY(w.roofline()->hasPredictedPoint());
    QVERIFY2(w.roofline()->memberPoints() > 0, qPrintable(w.roofline()->message()));
  }

  void theGpuSelectorRecostsTheDetail() {
    MainWindow w;
    w.show();
    open(w, sharedTrace("kineto/hta_six_streams_rank0.json.gz"));
    QVERIFY(!w.session()->report.candidates.empty());
    w.selection()->setCandidate(0);
    const int h100 = w.gpuSelector()->findData("h100-sxm");
    QVERIFY(h100 >= 0);
    w.gpuSelector()->setCurrentIndex(h100);
    w.waitForBackground();
    bool found = false;
    for (int r = 0; r < w.detailModel()->rowCount(); ++r) {
      found |= w.detailModel()->index(r, 0).data().toString() == "Cost on h100-sxm";
    }
    QVERIFY(found);
  }

  void aTraceThatFailsToImportShowsTheImportersMessage() {
    MainWindow w;
    w.show();
    open(w, sharedTrace("kineto/hta_cpu_only.json.gz"));
    QVERIFY(!w.session());
    QVERIFY2(w.bannerText().contains("no GPU kernels"), qPrintable(w.bannerText()));
    QTemporaryDir dir;
    const QString junk = dir.filePath("junk.json");
    QFile f(junk);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"traceEvents\": [ {\"ph\": ");
    f.close();
    open(w, junk);
    QVERIFY2(w.bannerText().contains(junk), qPrintable(w.bannerText()));
  }

  void droppingAFileOpensIt() {
    MainWindow w;
    w.show();
    auto* mime = new QMimeData;
    mime->setUrls({QUrl::fromLocalFile(sharedTrace("kineto/hta_simple_add.json.gz"))});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &drop);
    w.waitForLoad();
    QVERIFY(w.session());
    QVERIFY(QString::fromStdString(w.session()->path).endsWith("hta_simple_add.json.gz"));
    delete mime;
  }

  void wheelAndRubberBandZoomTheTimeline() {
    MainWindow w;
    w.show();
    open(w, sharedTrace("kineto/hta_alexnet_a100.json.gz"));
    TimelineWidget* t = w.timeline();
    t->fit();
    const double before = t->window().span();
    const QPoint c(t->width() / 2, 60);
    QWheelEvent wheel(c, t->mapToGlobal(c), QPoint(), QPoint(0, 360), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                      false);
    QApplication::sendEvent(t, &wheel);
    QVERIFY(t->window().span() < before * 0.6);
    t->fit();
    const int x0 = TimelinePainter::kTitleWidth + 100, x1 = TimelinePainter::kTitleWidth + 200;
    QTest::mousePress(t, Qt::RightButton, {}, QPoint(x0, 60));
    QMouseEvent move(QEvent::MouseMove, QPointF(x1, 60), t->mapToGlobal(QPointF(x1, 60)), Qt::NoButton, Qt::RightButton,
                     Qt::NoModifier);
    QApplication::sendEvent(t, &move);
    QTest::mouseRelease(t, Qt::RightButton, {}, QPoint(x1, 60));
    const double px = before / (t->width() - TimelinePainter::kTitleWidth);
    QVERIFY(std::abs(t->window().span() - 100 * px) < 2 * px);
  }
};

QTEST_MAIN(GuiViewsTest)
#include "gui_views_test.moc"
