// The views on the offscreen platform: selection linking between table, timeline, detail, graph, roofline and PTX;
// filtering through the filter bar; review decisions persisted in the trace and reloaded by a new window; export
// of accepted plans; import errors shown in the window; drag and drop; zoom.
#include <QHeaderView>
#include <QMimeData>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <QUrl>

#include <nlohmann/json.hpp>

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

// Clicks candidate `index`'s row of the table with `modifiers` (Ctrl adds it to the selection).
void clickCandidateRow(MainWindow& w, int index, Qt::KeyboardModifiers modifiers = {}) {
  QTableView* table = w.candidates()->table();
  CandidateFilter* filter = w.candidates()->filter();
  for (int r = 0; r < filter->rowCount(); ++r) {
    const QModelIndex i = filter->index(r, 0);
    if (i.data(CandidatesModel::CandidateIndexRole).toInt() != index) continue;
    table->scrollTo(i);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, modifiers, table->visualRect(i).center());
    return;
  }
  QFAIL("no row for the candidate");
}

// Two candidates of `s` that share a launch (the recording's chain and its pair), or {-1, -1}.
std::pair<int, int> conflictingPair(const Session& s) {
  const auto& cands = s.report.candidates;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].conflicts_with.empty()) continue;
    for (size_t j = 0; j < cands.size(); ++j) {
      if (cands[j].rank == cands[i].conflicts_with.front()) return {static_cast<int>(i), static_cast<int>(j)};
    }
  }
  return {-1, -1};
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

  // On a PyTorch trace, the operators that launched a candidate's kernels and its module instances are linked to
  // it: clicking one selects the candidate.
  void clickingAnOperatorOrModuleSelectsItsCandidate() {
    MainWindow w;
    w.resize(1600, 950);
    w.show();
    open(w, sharedTrace("kineto/tracelens_bert_small_h100.json.gz"));
    const TimelineData& t = w.session()->timeline;
    for (SliceKind kind : {SliceKind::kCpuOp, SliceKind::kRange}) {
      // The last linked slice of that kind whose candidate is not the one selected now.
      std::optional<SliceRef> pick;
      for (uint32_t li = 0; li < t.lanes.size(); ++li) {
        for (uint32_t si = 0; si < t.lanes[li].slices.size(); ++si) {
          const Slice& s = t.lanes[li].slices[si];
          if (s.kind == kind && s.candidate >= 0 && s.candidate != w.selection()->candidate()) pick = SliceRef{li, si};
        }
      }
      QVERIFY(pick);
      const Slice& s = t.slice(*pick);
      const double pad = 2 * static_cast<double>(s.end - s.start + 1);
      w.timeline()->setWindow({static_cast<double>(s.start) - pad, static_cast<double>(s.end) + pad, 0});
      const QPoint p = w.timeline()->pointOf(*pick);
      QVERIFY2(w.timeline()->rect().contains(p), qPrintable(QString("%1,%2").arg(p.x()).arg(p.y())));
      QVERIFY(w.timeline()->describe(*pick).contains(
          QString("candidate #%1").arg(w.session()->report.candidates[static_cast<size_t>(s.candidate)].rank)));
      QTest::mouseClick(w.timeline(), Qt::LeftButton, {}, p);
      QCOMPARE(w.selection()->candidate(), static_cast<int>(s.candidate));
      QCOMPARE(w.candidates()->selectedCandidate(), static_cast<int>(s.candidate));
      QCOMPARE(w.timeline()->highlight().candidate, static_cast<int>(s.candidate));
    }
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

  // Ctrl+click selects both candidates of a conflicting pair: Accept refuses both with the reason in the banner;
  // accepting one and then the other refuses the second, naming the accepted one; the conflicts column marks it.
  void acceptingConflictingCandidatesIsRefusedWithTheReason() {
    QTemporaryDir dir;
    const QString copy = testing::scratchCopy(dir, emulatorTrace());
    MainWindow w;
    w.show();
    open(w, copy);
    const auto [a, b] = conflictingPair(*w.session());
    QVERIFY(a >= 0);
    const analyzer::Candidate& ca = w.session()->report.candidates[static_cast<size_t>(a)];
    const analyzer::Candidate& cb = w.session()->report.candidates[static_cast<size_t>(b)];
    const QString reason = QString::fromStdString(analyzer::candidateConflictText(cb, ca));
    CandidatesModel* model = w.candidatesModel();

    clickCandidateRow(w, a);
    clickCandidateRow(w, b, Qt::ControlModifier);
    QCOMPARE(w.candidates()->selectedCandidates(), (std::vector<int>{std::min(a, b), std::max(a, b)}));
    w.noteEdit()->setText("both");
    QTest::mouseClick(w.acceptButton(), Qt::LeftButton);
    QVERIFY2(w.bannerText().startsWith("None of the 2 candidates accepted"), qPrintable(w.bannerText()));
    QVERIFY2(w.bannerText().contains(reason), qPrintable(w.bannerText()));
    QCOMPARE(model->index(a, model->reviewColumn()).data().toString(), QString());
    QCOMPARE(model->index(b, model->reviewColumn()).data().toString(), QString());

    clickCandidateRow(w, a);
    QCOMPARE(w.candidates()->selectedCandidates(), std::vector<int>{a});
    QTest::mouseClick(w.acceptButton(), Qt::LeftButton);
    QCOMPARE(model->index(a, model->reviewColumn()).data().toString(), QString("accepted"));
    clickCandidateRow(w, b);
    QTest::mouseClick(w.acceptButton(), Qt::LeftButton);
    QVERIFY2(w.bannerText().startsWith("Not accepted"), qPrintable(w.bannerText()));
    QVERIFY2(w.bannerText().contains(QString("#%1 (%2) %3").arg(cb.rank).arg(candidateMembers(cb)).arg(reason)),
             qPrintable(w.bannerText()));
    QVERIFY(w.bannerText().contains(QString("#%1 is accepted").arg(ca.rank)));
    QCOMPARE(model->index(b, model->reviewColumn()).data().toString(), QString());
    QCOMPARE(model->index(b, model->conflictColumn()).data().toString(), QString("#%1 (accepted)").arg(ca.rank));
    auto stored = core::readReviewDecisions(copy.toStdString());
    QVERIFY(stored.ok());
    QCOMPARE(stored->size(), size_t{1});
    // Rejecting both together is not refused.
    clickCandidateRow(w, a, Qt::ControlModifier);
    QCOMPARE(w.candidates()->selectedCandidates().size(), size_t{2});
    // Ctrl+click on a selected row takes it out of the selection.
    clickCandidateRow(w, a, Qt::ControlModifier);
    QCOMPARE(w.candidates()->selectedCandidates(), std::vector<int>{b});
    clickCandidateRow(w, a, Qt::ControlModifier);
    QCOMPARE(w.decide(core::ReviewVerdict::kRejected), QString());
    QCOMPARE(model->index(a, model->reviewColumn()).data().toString(), QString("rejected"));
    QCOMPARE(model->index(b, model->reviewColumn()).data().toString(), QString("rejected"));
  }

  // On the recording: the chain accepted, its conflicting pair refused; the export writes the chain's plan only,
  // validated on the emulator (plan.json says "passed"). An inconsistent accepted set (decisions stored by another
  // tool) is not exported at all.
  void exportWritesExactlyTheAcceptedConsistentSet() {
    QTemporaryDir dir;
    const QString copy = testing::scratchCopy(dir, emulatorTrace());
    MainWindow w;
    w.show();
    open(w, copy);
    const auto [a, b] = conflictingPair(*w.session());
    QVERIFY(a >= 0);
    const auto& cands = w.session()->report.candidates;
    QCOMPARE(cands[static_cast<size_t>(a)].legality, analyzer::Legality::kProven);
    w.selection()->setCandidate(a);
    QCOMPARE(w.decide(core::ReviewVerdict::kAccepted), QString());
    w.selection()->setCandidate(b);
    QVERIFY(!w.decide(core::ReviewVerdict::kAccepted).isEmpty());
    QStringList lines;
    bool done = false;
    w.exportPlans(dir.filePath("plans"), [&](QStringList l) {
      lines = l;
      done = true;
    });
    QVERIFY(w.cancelButton()->isVisible());  // the export runs in the background and can be cancelled
    QVERIFY(waitFor([&] { return done; }));
    QCOMPARE(lines.size(), 1);
    const QString rank_a = QString("candidate-%1").arg(cands[static_cast<size_t>(a)].rank);
    QCOMPARE(QDir(dir.filePath("plans")).entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList{rank_a});
    QFile json(dir.filePath("plans/" + rank_a + "/plan.json"));
    QVERIFY2(json.open(QIODevice::ReadOnly), qPrintable(lines.join('\n')));
    const nlohmann::json plan = nlohmann::json::parse(json.readAll().toStdString());
    QCOMPARE(plan.at("candidate_rank").get<int>(), cands[static_cast<size_t>(a)].rank);
    QCOMPARE(QString::fromStdString(plan.at("validation").at("emulator").get<std::string>()), QString("passed"));

    // Exporting again into a directory that holds a plan of a candidate no longer accepted is refused.
    QVERIFY(QDir().mkpath(dir.filePath("plans/candidate-99")));
    done = false;
    w.exportPlans(dir.filePath("plans"), [&](QStringList l) {
      lines = l;
      done = true;
    });
    QVERIFY(done);
    QVERIFY2(lines.value(0).contains("candidate-99, which is not accepted"), qPrintable(lines.join('\n')));

    // Both accepted behind the GUI's back: nothing is exported, and the banner says which pair conflicts.
    core::ReviewDecision forced;
    forced.candidate_key = w.session()->candidate_keys[static_cast<size_t>(b)];
    forced.rank = cands[static_cast<size_t>(b)].rank;
    QVERIFY(core::storeReviewDecision(copy.toStdString(), forced).ok());
    MainWindow again;
    again.show();
    open(again, copy);
    QCOMPARE(again.reviews()->accepted().size(), size_t{2});
    done = false;
    again.exportPlans(dir.filePath("plans2"), [&](QStringList l) {
      lines = l;
      done = true;
    });
    QVERIFY(done);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines.front().startsWith("Plans not exported: the accepted candidates are not a consistent set"),
             qPrintable(lines.front()));
    QVERIFY(lines.front().contains("both are accepted"));
    QVERIFY(again.bannerText().contains("not a consistent set"));
    QVERIFY(!QFileInfo::exists(dir.filePath("plans2")));
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

  // A Kineto trace's roofline: the analyzer's estimates from operator shapes are placed, hollow, and the legend
  // says so.
  void theRooflineOfAKinetoTraceShowsEstimatedPoints() {
    MainWindow w;
    w.show();
    open(w, sharedTrace("kineto/tracelens_bert_small_h100.json.gz"));
    const auto& cands = w.session()->report.candidates;
    auto it = std::find_if(cands.begin(), cands.end(), [](const analyzer::Candidate& c) {
      return !c.members.empty() && c.members.front().op == "aten::addmm";
    });
    QVERIFY(it != cands.end());
    w.selection()->setCandidate(static_cast<int>(it - cands.begin()));
    QVERIFY2(w.roofline()->memberPoints() > 0, qPrintable(w.roofline()->message()));
    QVERIFY(w.roofline()->hasPredictedPoint());
    QVERIFY(w.roofline()->estimatedPoints() > w.roofline()->memberPoints());
    QVERIFY(w.roofline()->message().contains("estimated from operator shapes"));
    QStringList legend;
    for (QAbstractSeries* series : w.roofline()->chart()->series()) {
      legend << series->name();
      auto* scatter = qobject_cast<QScatterSeries*>(series);
      if (scatter && series->name().contains("estimated from operator shapes")) {
        QCOMPARE(scatter->brush().style(), Qt::NoBrush);  // hollow
        QVERIFY(scatter->count() > 0);
      }
    }
    QVERIFY2(legend.filter("kernels, estimated from operator shapes").size() == 1, qPrintable(legend.join(" | ")));
  }

  // At 1280 pixels the columns that decide (kind, legality, saving) are in view and wide enough for their text,
  // however long the operator names are.
  void theVerdictColumnsAreVisibleAt1280Pixels() {
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    open(w, sharedTrace("kineto/tracelens_bert_small_h100.json.gz"));
    QTest::qWait(50);
    QTableView* table = w.candidates()->table();
    QHeaderView* header = table->horizontalHeader();
    QVERIFY(w.width() <= 1280);
    for (const char* name : {"Rank", "Kind", "Legality", "Saving/occ (µs)"}) {
      const int col = candidateColumn(QString::fromUtf8(name));
      QVERIFY(col >= 0);
      QVERIFY(!header->isSectionHidden(col));
      const int left = header->sectionViewportPosition(col), width = header->sectionSize(col);
      QVERIFY2(
          left >= 0 && left + width <= header->viewport()->width(),
          qPrintable(QString("%1 at %2+%3 of %4").arg(name).arg(left).arg(width).arg(header->viewport()->width())));
      // Not cut: as wide as its widest cell and its title.
      QVERIFY2(width >= static_cast<QAbstractItemView*>(table)->sizeHintForColumn(col), name);
      QVERIFY2(width >= header->fontMetrics().horizontalAdvance(QString::fromUtf8(name)), name);
    }
    // The operator names are there too, capped so that they do not push the rest out of reach.
    const int ops = candidateColumn("Operators / kernels");
    QVERIFY(header->sectionSize(ops) <= CandidatePanel::kMaxColumnWidth);
    QVERIFY(table->model()->index(0, ops).data().toString().startsWith("aten::"));
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

  // File → Compare with… opens a window over the open trace and another: the demo's pair, its three tables filled,
  // the columns that say what changed in view at 1280 pixels and not cut.
  void theCompareWindowShowsTheDemosPairAt1280Pixels() {
    MainWindow w;
    w.show();
    CompareWindow* c = w.compare(testing::demoFile("before.sqlite"), testing::demoFile("after.sqlite"));
    c->resize(1280, 800);
    QVERIFY(QTest::qWaitForWindowExposed(c));
    c->waitForLoad();
    QVERIFY(c->comparison());
    QVERIFY2(c->bannerText().contains("launch count only"), qPrintable(c->bannerText()));
    QVERIFY2(c->summaryText().contains("12 before, 3 after"), qPrintable(c->summaryText()));
    const Comparison& cmp = *c->comparison();
    QCOMPARE(c->kernelsView()->model()->rowCount(), static_cast<int>(cmp.kernels.size()));
    QCOMPARE(c->plansView()->model()->rowCount(), 1);
    QCOMPARE(c->rangesView()->model()->rowCount(), 0);
    QTest::qWait(50);
    QHeaderView* header = c->kernelsView()->horizontalHeader();
    QVERIFY(c->width() <= 1280);
    for (const char* name : {"Kernel", "In", "Launches before", "Launches after", "Δ launches", "Replaced"}) {
      const int col = ComparisonModel::column(ComparisonModel::Table::kKernels, QString::fromUtf8(name));
      QVERIFY(col >= 0);
      const int left = header->sectionViewportPosition(col), width = header->sectionSize(col);
      QVERIFY2(
          left >= 0 && left + width <= header->viewport()->width(),
          qPrintable(QString("%1 at %2+%3 of %4").arg(name).arg(left).arg(width).arg(header->viewport()->width())));
      QVERIFY2(width >= static_cast<QAbstractItemView*>(c->kernelsView())->sizeHintForColumn(col) ||
                   width == CompareWindow::kMaxTextColumnWidth,
               name);
    }
    // Sortable: by the change in launches, the fused kernel (new) last.
    c->kernelsView()->sortByColumn(ComparisonModel::column(ComparisonModel::Table::kKernels, "Δ launches"),
                                   Qt::AscendingOrder);
    QAbstractItemModel* m = c->kernelsView()->model();
    QCOMPARE(m->index(m->rowCount() - 1, 0).data().toString().toStdString(), cmp.plans.front().fused_kernel);
  }

  void aCompareWindowNamesTheFileItCannotOpen() {
    CompareWindow c;
    c.show();
    QSignalSpy failed(&c, &CompareWindow::failed);
    const QString missing = "/nonexistent/kfuse-before.sqlite";
    c.open(missing, testing::demoFile("after.sqlite"));
    c.waitForLoad();
    QCOMPARE(failed.count(), 1);
    QVERIFY(!c.comparison());
    QVERIFY2(c.bannerText().contains(missing) && c.bannerText().contains("before"), qPrintable(c.bannerText()));
    // The window stays usable: the next pair opens.
    c.open(testing::demoFile("before.sqlite"), testing::demoFile("after.sqlite"));
    c.waitForLoad();
    QVERIFY(c.comparison());
    QVERIFY(!c.bannerText().contains(missing));
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
