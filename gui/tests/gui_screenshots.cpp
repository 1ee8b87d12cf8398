// Screenshots of every view for real traces (PyTorch profiles recorded on an A100 and on an H100, from
// ../shared/data) and for an emulator recording (the elementwise-chain example under `kfuse record` on the CPU
// stand-in), and of the before/after window for `kfuse demo`'s two recordings, written as PNGs under the build
// directory (gui/screenshots/). They are test artifacts for people to look at, not compared pixel by pixel; the test
// checks that each image was written and is not blank. CTest runs it twice: on Qt's offscreen platform, and on a real X
// server (Xvfb, the xcb platform) where xvfb-run is installed.
#include <QDir>
#include <QImage>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "compare_view.h"
#include "main_window.h"
#include "test_support.h"

using namespace kfuse::gui;

namespace {
// The build tree's gui/screenshots, or KFUSE_GUI_SCREENSHOT_DIR (the Xvfb run writes beside the offscreen one).
QString screenshotDir() {
  return qEnvironmentVariable("KFUSE_GUI_SCREENSHOT_DIR", QStringLiteral(KFUSE_GUI_SCREENSHOT_DIR));
}
}  // namespace

class GuiScreenshots : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(QDir().mkpath(screenshotDir()));
  }

  void everyView_data() {
    QTest::addColumn<QString>("trace");
    QTest::addColumn<QString>("stem");
    QTest::newRow("kineto") << testing::sharedTrace("kineto/hta_six_streams_rank0.json.gz") << "kineto-six-streams";
    // Operators, module paths and remedies in the table; a roofline of estimates from operator shapes.
    QTest::newRow("kineto-bert") << testing::sharedTrace("kineto/tracelens_bert_small_h100.json.gz") << "kineto-bert";
    QTest::newRow("emulator") << testing::emulatorTrace() << "emulator-elementwise-chain";
  }

  void everyView() {
    QFETCH(QString, trace);
    QFETCH(QString, stem);
    MainWindow w;
    w.resize(1600, 950);
    w.show();
    w.openFile(trace);
    w.waitForLoad();
    w.waitForBackground();
    QVERIFY(w.session());
    QVERIFY(!w.session()->report.candidates.empty());
    // The best proven candidate where there is one (the PTX view rewrites only those).
    int pick = 0;
    const auto& cands = w.session()->report.candidates;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].legality == kfuse::analyzer::Legality::kProven) {
        pick = static_cast<int>(i);
        break;
      }
    }
    w.selection()->setCandidate(pick);
    w.timeline()->showCandidate(pick);
    const QStringList names = {"timeline", "graph", "roofline", "ptx"};
    for (int tab = 0; tab < w.tabs()->count(); ++tab) {
      w.tabs()->setCurrentIndex(tab);
      if (names[tab] == "ptx" && w.session()->isKfuseTrace()) {
        QSignalSpy finished(w.ptx(), &PtxView::finished);
        w.ptx()->rewrite();
        QVERIFY(finished.wait(300'000));
      }
      QTest::qWait(50);
      const QImage image = w.grab().toImage();
      const QString file = QDir(screenshotDir()).filePath(QString("%1-%2.png").arg(stem, names[tab]));
      QVERIFY(image.save(file, "PNG", 0));  // 0: the strongest compression
      // Not blank: many distinct colours.
      QSet<QRgb> colours;
      for (int y = 0; y < image.height(); y += 7) {
        for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
      }
      QVERIFY2(colours.size() > 20, qPrintable(file));
    }
    // The timeline zoomed out over the whole trace.
    w.tabs()->setCurrentIndex(0);
    w.timeline()->fit();
    QTest::qWait(50);
    QVERIFY(w.timeline()->grab().save(QDir(screenshotDir()).filePath(stem + "-timeline-whole.png"), "PNG", 0));
  }

  // The before/after window on `kfuse demo`'s two recordings (gui.RecordDemo), at 1280 pixels; and on two
  // recordings of the collector's NVTX program, for its ranges table.
  void compareView_data() {
    QTest::addColumn<QString>("before");
    QTest::addColumn<QString>("after");
    QTest::addColumn<QString>("stem");
    QTest::newRow("demo") << testing::demoFile("before.sqlite") << testing::demoFile("after.sqlite") << "gui-compare";
    QTest::newRow("nvtx") << testing::nvtxTraceBefore() << testing::nvtxTraceAfter() << "gui-compare-nvtx-ranges";
  }

  void compareView() {
    QFETCH(QString, before);
    QFETCH(QString, after);
    QFETCH(QString, stem);
    CompareWindow c;
    c.resize(1280, 760);
    c.show();
    c.open(before, after);
    c.waitForLoad();
    QVERIFY(c.comparison());
    c.kernelsView()->sortByColumn(ComparisonModel::column(ComparisonModel::Table::kKernels, "Δ launches"),
                                  Qt::AscendingOrder);
    QTest::qWait(50);
    const QImage image = c.grab().toImage();
    const QString file = QDir(screenshotDir()).filePath(stem + ".png");
    QVERIFY(image.save(file, "PNG", 0));
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 7) {
      for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
    }
    QVERIFY2(colours.size() > 20, qPrintable(file));
  }
};

QTEST_MAIN(GuiScreenshots)
#include "gui_screenshots.moc"
