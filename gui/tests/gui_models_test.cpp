// The GUI's models and helpers (no widgets): every item model under QAbstractItemModelTester, the filter against
// counts recomputed from the report, the timeline's culling against brute force, the painter's level of detail,
// graph layout with graphviz, PTX highlighting, review decisions persisted, and the loader's errors and cancel.
#include <QAbstractItemModelTester>
#include <QImage>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include <QFile>
#include <QSortFilterProxyModel>

#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "kfuse/core/trace_store.h"
#include "kfuse/gui/candidates_model.h"
#include "kfuse/gui/comparison_model.h"
#include "kfuse/gui/detail_model.h"
#include "kfuse/gui/graph_layout.h"
#include "kfuse/gui/jobs.h"
#include "kfuse/gui/ptx_highlighter.h"
#include "kfuse/gui/review_book.h"
#include "kfuse/gui/roofline_points.h"
#include "kfuse/gui/timeline_painter.h"
#include "test_support.h"

using namespace kfuse;
using namespace kfuse::gui;
using kfuse::gui::testing::emulatorTrace;
using kfuse::gui::testing::sharedTrace;

namespace {

std::shared_ptr<const Session> load(const QString& path) {
  auto s = loadSession(path.toStdString(), {});
  if (!s.ok()) qFatal("%s", s.status().message().c_str());
  return *s;
}

// Launches per kernel (mangled name) read straight from a kfuse trace, and the sum of their GPU times (kNoTime: none
// recorded).
struct KernelCount {
  int64_t launches = 0;
  int64_t gpu_ns = core::kNoTime;
};
std::map<std::string, KernelCount> launchesPerKernel(const QString& path) {
  auto reader = core::TraceReader::open(path.toStdString());
  if (!reader.ok()) qFatal("%s", reader.status().message().c_str());
  auto trace = (*reader)->readAll();
  if (!trace.ok()) qFatal("%s", trace.status().message().c_str());
  std::map<core::Id, std::string> names;
  for (const core::KernelFunction& f : trace->functions) names[f.id] = f.mangled_name;
  std::map<std::string, KernelCount> out;
  for (const core::Launch& l : trace->launches) {
    KernelCount& k = out[names.at(l.function_id)];
    ++k.launches;
    if (l.gpu_start_ns != core::kNoTime && l.gpu_end_ns != core::kNoTime) {
      k.gpu_ns = (k.gpu_ns == core::kNoTime ? 0 : k.gpu_ns) + (l.gpu_end_ns - l.gpu_start_ns);
    }
  }
  return out;
}

nlohmann::json readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  return nlohmann::json::parse(f.readAll().toStdString());
}

const KernelDelta* findKernel(const Comparison& c, const std::string& name) {
  for (const KernelDelta& k : c.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const RangeDelta* findRange(const Comparison& c, const std::string& path) {
  for (const RangeDelta& r : c.ranges) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

}  // namespace

class GuiModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    alexnet_ = load(sharedTrace("kineto/hta_alexnet_a100.json.gz"));
    six_ = load(sharedTrace("kineto/hta_six_streams_rank0.json.gz"));
    emu_ = load(emulatorTrace());
    // H100, BERT (inference), CPU operators with shapes and nn.Module events (the data README).
    bert_ = load(sharedTrace("kineto/tracelens_bert_small_h100.json.gz"));
  }

  void timelineHasALanePerStreamWithEveryOperation() {
    const TimelineData& t = alexnet_->timeline;
    // The data README: 79 kernels, 16 memcpy, 3 memset.
    QCOMPARE(t.kernels, size_t{79});
    QCOMPARE(t.copies, size_t{16});
    QCOMPARE(t.sets, size_t{3});
    size_t placed = 0;
    std::set<core::Id> streams;
    for (const Lane& lane : t.lanes) {
      if (lane.kind != LaneKind::kStream) continue;
      QVERIFY(streams.insert(lane.stream_id).second);  // one lane per stream
      placed += lane.slices.size();
      for (size_t i = 1; i < lane.slices.size(); ++i) QVERIFY(lane.slices[i - 1].start <= lane.slices[i].start);
    }
    QCOMPARE(placed, size_t{79 + 16 + 3});
    QCOMPARE(t.by_launch.size(), size_t{79});
    QVERIFY(!t.placed_at_api_time);
    // The emulator recording has no GPU times: placed at the launch calls.
    QVERIFY(emu_->timeline.placed_at_api_time);
    QCOMPARE(emu_->timeline.kernels, emu_->input.trace.launches.size());
  }

  void cpuOperatorsAreNestedRangeLanesPerThread() {
    const TimelineData& t = six_->timeline;
    size_t with_time = 0;
    for (const analyzer::CpuOp& op : six_->input.cpu_ops) with_time += op.start_ns != core::kNoTime;
    QVERIFY(with_time > 0);
    QCOMPARE(t.cpu_ops, with_time);
    size_t placed = 0;
    for (const Lane& lane : t.lanes) {
      if (lane.kind != LaneKind::kRanges) continue;
      // Range lanes hold CPU operators or annotation ranges (nn.Module and user annotations of a PyTorch
      // profile), never both on one lane.
      const SliceKind kind = lane.slices.empty() ? SliceKind::kCpuOp : lane.slices.front().kind;
      QVERIFY(kind == SliceKind::kCpuOp || kind == SliceKind::kRange);
      for (size_t i = 0; i < lane.slices.size(); ++i) {
        QCOMPARE(lane.slices[i].kind, kind);
        // One row per nesting depth: ranges on a row do not overlap.
        if (i > 0) QVERIFY(lane.slices[i - 1].end <= lane.slices[i].start);
      }
      if (kind == SliceKind::kCpuOp) placed += lane.slices.size();
    }
    QCOMPARE(placed, with_time);
  }

  void kernelsAreMarkedWithTheirCandidate() {
    for (const auto& session : {alexnet_, emu_}) {
      const auto& cands = session->report.candidates;
      for (size_t ci = 0; ci < cands.size(); ++ci) {
        for (const auto& occ : cands[ci].occurrence_launches) {
          for (core::Id id : occ) {
            auto it = session->timeline.by_launch.find(id);
            QVERIFY(it != session->timeline.by_launch.end());
            const int marked = session->timeline.slice(it->second).candidate;
            QVERIFY(marked >= 0 && marked <= static_cast<int>(ci));  // the first candidate (by rank) wins
          }
        }
      }
    }
    QVERIFY(!emu_->report.candidates.empty());
  }

  void cullingFindsExactlyTheOverlappingSlices() {
    const TimelineData& t = six_->timeline;
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int64_t> at(t.start_ns, t.end_ns);
    for (int trial = 0; trial < 200; ++trial) {
      int64_t a = at(rng), b = at(rng);
      if (a > b) std::swap(a, b);
      for (const Lane& lane : t.lanes) {
        std::vector<size_t> brute, culled;
        for (size_t i = 0; i < lane.slices.size(); ++i) {
          if (lane.slices[i].end > a && lane.slices[i].start < b) brute.push_back(i);
        }
        for (size_t i = lane.firstVisible(a); i < lane.endVisible(b); ++i) {
          if (lane.slices[i].end > a) culled.push_back(i);
        }
        QCOMPARE(culled, brute);
      }
    }
  }

  void painterWorkIsBoundedByPixelsNotSlices() {
    const TimelineData& t = six_->timeline;
    QImage image(1200, 600, QImage::Format_RGB32);
    QPainter p(&image);
    TimelinePainter painter;
    TimelineWindow all{static_cast<double>(t.start_ns), static_cast<double>(t.end_ns), 0};
    const TimelinePaintStats whole = painter.paint(p, image.size(), t, all, {});
    size_t visible_lanes = 0;
    for (size_t i = 0; i < t.lanes.size(); ++i) visible_lanes += TimelinePainter::laneTop(t, i) < 600;
    // At most one box or column per pixel column per lane, far fewer than the 7747 operations.
    QVERIFY(whole.boxes + whole.columns <= visible_lanes * 1020);
    QVERIFY(whole.columns > 0);
    QVERIFY(whole.boxes + whole.columns < t.kernels);
    // Zoomed in on 20 µs the slices are boxes of their own.
    const Slice& s = t.lanes[0].slices[t.lanes[0].slices.size() / 2];
    TimelineWindow zoom{static_cast<double>(s.start) - 10'000, static_cast<double>(s.start) + 10'000, 0};
    const TimelinePaintStats close = painter.paint(p, image.size(), t, zoom, {});
    QVERIFY(close.boxes >= 1);
    // The box under a slice's middle is that slice.
    const double mid = (static_cast<double>(s.start) + static_cast<double>(s.end)) / 2;
    const int x = static_cast<int>(TimelinePainter::xAt(mid, image.size(), zoom));
    const int y = TimelinePainter::laneTop(t, 0) + 5;
    auto hit = painter.hitTest(QPoint(x, y), image.size(), t, zoom);
    QVERIFY(hit.has_value());
    QCOMPARE(hit->lane, 0u);
    QCOMPARE(t.slice(*hit).start, s.start);
  }

  void candidatesModelPassesTheModelTester() {
    CandidatesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSession(alexnet_);
    model.setSession(emu_);
    QCOMPARE(model.rowCount(), static_cast<int>(emu_->report.candidates.size()));
    CandidateFilter filter;
    QAbstractItemModelTester tester2(&filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
    filter.setSourceModel(&model);
    filter.setNameFilter("zzz-no-such-kernel");
    QCOMPARE(filter.rowCount(), 0);
    filter.setNameFilter({});
    model.setSession(six_);
    filter.sort(7, Qt::DescendingOrder);
  }

  void filterAgreesWithTheReport() {
    CandidatesModel model;
    model.setSession(six_);
    CandidateFilter filter;
    filter.setSourceModel(&model);
    const auto& cands = six_->report.candidates;
    QVERIFY(cands.size() > 2);
    auto count = [&](auto pred) { return static_cast<int>(std::count_if(cands.begin(), cands.end(), pred)); };
    filter.setKinds({analyzer::CandidateKind::kHorizontal});
    QCOMPARE(filter.rowCount(), count([](const auto& c) { return c.kind == analyzer::CandidateKind::kHorizontal; }));
    filter.setKinds({});
    filter.setLegalities({analyzer::Legality::kBlocked});
    QCOMPARE(filter.rowCount(), count([](const auto& c) { return c.legality == analyzer::Legality::kBlocked; }));
    filter.setLegalities({});
    filter.setMinConfidence(analyzer::Confidence::kMedium);
    QCOMPARE(filter.rowCount(), count([](const auto& c) { return c.confidence != analyzer::Confidence::kLow; }));
    filter.setMinConfidence(analyzer::Confidence::kLow);
    const double median_us = cands[cands.size() / 2].total_saving_ns / 1000.0;
    filter.setMinTotalSavingUs(median_us);
    QCOMPARE(filter.rowCount(), count([&](const auto& c) { return c.total_saving_ns / 1000.0 >= median_us; }));
    filter.setMinTotalSavingUs(0);
    filter.setMinOccurrences(10);
    QCOMPARE(filter.rowCount(), count([](const auto& c) { return c.occurrences.size() >= 10; }));
    filter.setMinOccurrences(0);
    const QString part = QString::fromStdString(cands.front().names.front()).left(6);
    filter.setNameFilter(part.toUpper());  // case-insensitive
    QCOMPARE(filter.rowCount(), count([&](const auto& c) {
               for (const auto& n : c.names) {
                 if (QString::fromStdString(n).contains(part, Qt::CaseInsensitive)) return true;
               }
               for (const auto& n : c.mangled_names) {
                 if (QString::fromStdString(n).contains(part, Qt::CaseInsensitive)) return true;
               }
               for (const auto& m : c.members) {
                 if (QString::fromStdString(m.label).contains(part, Qt::CaseInsensitive)) return true;
                 if (QString::fromStdString(m.module).contains(part, Qt::CaseInsensitive)) return true;
               }
               return QString::fromStdString(c.module_pattern).contains(part, Qt::CaseInsensitive);
             }));
  }

  // A PyTorch trace's candidates read as `kfuse analyze` prints them: operators with dtypes and shapes, the module
  // path, the module instances and the remedies, from the report itself.
  void theTableNamesOperatorsAndModulesOfAPyTorchTrace() {
    CandidatesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSession(bert_);
    const auto& cands = bert_->report.candidates;
    QVERIFY(!cands.empty());
    const int ops = candidateColumn("Operators / kernels"), module = candidateColumn("Module"),
              instances = candidateColumn("Instances"), remedies = candidateColumn("Remedies");
    QVERIFY(ops >= 0 && module >= 0 && instances >= 0 && remedies >= 0);
    // The residual add after the attention output projection: 4 layers, one occurrence in each (data README).
    int self_output = -1;
    for (int r = 0; r < model.rowCount(); ++r) {
      const analyzer::Candidate& c = cands[static_cast<size_t>(r)];
      const QString members = model.index(r, ops).data().toString();
      QCOMPARE(members, QString::fromStdString(analyzer::candidateMembersText(c, true)).replace(" -> ", " → "));
      QVERIFY2(members.contains("aten::"), qPrintable(members));  // every kernel here has its operator
      QVERIFY(!members.contains("Kernel2<") && !members.contains("elementwise_kernel"));
      if (c.module_pattern == "BertLMHeadModel.BertModel.BertEncoder.BertLayer.BertAttention.BertSelfOutput" &&
          members.startsWith("aten::addmm bf16[141,512]x[512,512] → aten::add bf16[1,141,512]")) {
        self_output = r;
      }
    }
    QVERIFY(self_output >= 0);
    const analyzer::Candidate& c = cands[static_cast<size_t>(self_output)];
    QCOMPARE(model.index(self_output, module).data().toString(), QString("BertAttention.BertSelfOutput"));
    QCOMPARE(model.index(self_output, instances).data().toULongLong(), qulonglong{4});
    const QString where = model.index(self_output, module).data(Qt::ToolTipRole).toString();
    QVERIFY2(where.startsWith(QString::fromStdString(analyzer::candidateWhereText(c))), qPrintable(where));
    for (int layer = 0; layer < 4; ++layer) {
      const QString instance = QString(
                                   "BertLMHeadModel_0.BertModel_0.BertEncoder_0.BertLayer_%1.BertAttention_%1."
                                   "BertSelfOutput_%1 ×1")
                                   .arg(layer);
      QVERIFY2(where.contains(instance), qPrintable(where));
    }
    QVERIFY(model.index(self_output, remedies).data().toString().contains("gemm-epilogue"));
    const QString advice = model.index(self_output, remedies).data(Qt::ToolTipRole).toString();
    for (const analyzer::Remedy& r : c.remedies) QVERIFY(advice.contains(QString::fromStdString(r.text)));
    // The kind column is kfuse analyze's kind, and the filter finds candidates by operator and by module.
    QCOMPARE(model.index(self_output, candidateColumn("Kind")).data().toString(),
             QString(analyzer::fusionKindName(c.fusion)));
    CandidateFilter filter;
    filter.setSourceModel(&model);
    filter.setNameFilter("bertselfoutput");
    QVERIFY(filter.rowCount() >= 1);
    for (int r = 0; r < filter.rowCount(); ++r) {
      const int i = filter.index(r, 0).data(CandidatesModel::CandidateIndexRole).toInt();
      QVERIFY(QString::fromStdString(cands[static_cast<size_t>(i)].module_pattern).contains("BertSelfOutput"));
    }
    filter.setNameFilter("aten::native_layer_norm");
    QVERIFY(filter.rowCount() >= 1);
  }

  void theDetailShowsThePyTorchContextAndRemedies() {
    const auto& cands = bert_->report.candidates;
    auto it = std::find_if(cands.begin(), cands.end(), [](const analyzer::Candidate& c) {
      return c.modules.size() == 4 && !c.remedies.empty() && !c.members.empty() &&
             c.members.front().op == "aten::addmm";
    });
    QVERIFY(it != cands.end());
    const analyzer::Candidate& c = *it;
    DetailModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setTree(candidateDetail(*bert_, bert_->report, c));
    QStringList sections;
    for (int r = 0; r < model.rowCount(); ++r) sections << model.index(r, 0).data().toString();
    QVERIFY2(sections.contains("PyTorch context") && sections.contains("Remedies"), qPrintable(sections.join(", ")));
    const QModelIndex context = model.index(sections.indexOf("PyTorch context"), 0);
    QCOMPARE(model.index(context.row(), 1).data().toString(),
             QString::fromStdString(analyzer::candidateMembersText(c)));
    std::map<QString, QModelIndex> rows;
    for (int r = 0; r < model.rowCount(context); ++r)
      rows[model.index(r, 0, context).data().toString()] = model.index(r, 0, context);
    QVERIFY(rows.count("where") && rows.count("module instances"));
    QCOMPARE(model.index(rows["where"].row(), 1, context).data().toString(),
             QString::fromStdString(analyzer::candidateWhereText(c)));
    QCOMPARE(model.rowCount(rows["module instances"]), 4);
    const QModelIndex instance = model.index(0, 0, rows["module instances"]);
    QCOMPARE(instance.data(Qt::ToolTipRole).toString(), QString::fromStdString(c.modules.front().module));
    QVERIFY(QString::fromStdString(c.modules.front().module).endsWith("." + instance.data().toString()));
    QCOMPARE(model.index(0, 1, rows["module instances"]).data().toString(), QString("1 occurrence"));
    const QModelIndex remedies = model.index(sections.indexOf("Remedies"), 0);
    QCOMPARE(model.rowCount(remedies), static_cast<int>(c.remedies.size()));
    QCOMPARE(model.index(0, 1, remedies).data().toString(), QString::fromStdString(c.remedies.front().text));
    // Each member named by its operator, with its module and kernel family.
    const QModelIndex members = model.index(sections.indexOf("Members"), 0);
    const QModelIndex first = model.index(0, 0, members);
    QCOMPARE(first.data().toString(), "1. " + QString::fromStdString(c.members.front().label));
    QStringList keys;
    for (int r = 0; r < model.rowCount(first); ++r) keys << model.index(r, 0, first).data().toString();
    for (const char* key : {"kernel", "operator", "module", "kernel family"}) QVERIFY2(keys.contains(key), key);
    // The legality section opens with the report's verdict sentence.
    const QModelIndex legality = model.index(sections.indexOf("Legality"), 0);
    QCOMPARE(model.index(0, 1, legality).data().toString(), QString::fromStdString(analyzer::candidateVerdictText(c)));
  }

  // The roofline of a Kineto trace: its bytes and FLOPs are the analyzer's estimates from operator shapes, so every
  // point is there and marked as an estimate.
  void theRooflineOfAKinetoTracePlacesEstimatedPoints() {
    const analyzer::Report& r = bert_->report;
    const RooflineChart all = rooflineChart(r, -1);
    QVERIFY(!all.marks.empty());
    size_t gemm_rows = 0;
    for (const analyzer::KernelRow& k : r.kernel_table) gemm_rows += k.bytes > 0 && k.flops > 0;
    QCOMPARE(all.marks.size(), gemm_rows);
    for (const RooflineMark& m : all.marks) {
      QVERIFY(m.estimated);
      QCOMPARE(m.bytes_source, std::string("operator-estimate"));
      QCOMPARE(m.flops_source, std::string("operator-estimate"));
      QVERIFY(m.intensity > 0 && m.flops_per_s > 0);
    }
    QCOMPARE(all.estimate_legend, std::string("estimated from operator shapes"));
    // A GEMM with an elementwise tail: the GEMM is placed, the tail (no FLOP estimate) is named in the note, and the
    // fused kernel's predicted point is there.
    const auto& cands = r.candidates;
    auto it = std::find_if(cands.begin(), cands.end(), [](const analyzer::Candidate& c) {
      return c.members.size() == 2 && c.members[0].op == "aten::addmm" && c.members[1].op == "aten::gelu";
    });
    QVERIFY(it != cands.end());
    const RooflineChart one = rooflineChart(r, static_cast<int>(it - cands.begin()));
    size_t members = 0, fused = 0;
    for (const RooflineMark& m : one.marks) {
      members += m.role == RooflineRole::kMember;
      fused += m.role == RooflineRole::kFused;
      if (m.role != RooflineRole::kKernel) QVERIFY(m.estimated);
    }
    QCOMPARE(members, size_t{1});
    QCOMPARE(fused, size_t{1});
    QVERIFY2(QString::fromStdString(one.note).contains("Not placed: " + QString::fromStdString(it->members[1].label) +
                                                       " (bytes operator-estimate, no FLOP count)"),
             one.note.c_str());
    // A recording's marks say the same of their own sources.
    for (const RooflineMark& m : rooflineChart(emu_->report, 0).marks) {
      QCOMPARE(m.estimated, !(countedSource(m.bytes_source) && countedSource(m.flops_source)));
    }
  }

  // The CPU operators that launched a candidate's kernels, and its module instances, carry the candidate on the
  // timeline.
  void theTimelineLinksOperatorsAndModulesToTheirCandidate() {
    const TimelineData& t = bert_->timeline;
    QVERIFY(t.cpu_ops > 0);
    std::map<int64_t, std::set<int32_t>> by_external;  // External id -> candidates of its launches
    for (size_t ci = 0; ci < bert_->report.candidates.size(); ++ci) {
      for (const auto& occ : bert_->report.candidates[ci].occurrence_launches) {
        for (core::Id id : occ) {
          auto e = bert_->input.launch_external_ids.find(id);
          if (e != bert_->input.launch_external_ids.end()) by_external[e->second].insert(static_cast<int32_t>(ci));
        }
      }
    }
    size_t marked = 0;
    for (const Lane& lane : t.lanes) {
      for (const Slice& s : lane.slices) {
        if (s.kind != SliceKind::kCpuOp) continue;
        const analyzer::CpuOp& op = bert_->input.cpu_ops[s.record_index];
        auto it = by_external.find(op.external_id);
        if (s.candidate < 0) {
          QVERIFY(it == by_external.end() || op.external_id == 0);
          continue;
        }
        QVERIFY(it != by_external.end());
        QCOMPARE(s.candidate, *it->second.begin());
        ++marked;
      }
    }
    QVERIFY(marked >= bert_->report.candidates.front().occurrence_launches.size());
    // The module lanes: the instances the report names for the attention-output candidate, one per layer.
    const auto& cands = bert_->report.candidates;
    auto it = std::find_if(cands.begin(), cands.end(), [](const analyzer::Candidate& c) {
      return c.module_pattern == "BertLMHeadModel.BertModel.BertEncoder.BertLayer.BertAttention.BertSelfOutput";
    });
    QVERIFY(it != cands.end());
    const auto index = static_cast<int32_t>(it - cands.begin());
    QStringList modules;
    for (const Lane& lane : t.lanes) {
      for (const Slice& s : lane.slices) {
        if (s.kind != SliceKind::kRange || s.candidate != index) continue;
        const core::NvtxRange& r = bert_->input.trace.nvtx_ranges[s.record_index];
        QCOMPARE(r.domain, std::string("nn.Module"));
        modules << QString::fromStdString(r.name);
      }
    }
    modules.sort();
    QCOMPARE(modules, QStringList({"BertSelfOutput_0", "BertSelfOutput_1", "BertSelfOutput_2", "BertSelfOutput_3"}));
  }

  void sortingBySavingIsNumeric() {
    CandidatesModel model;
    model.setSession(six_);
    CandidateFilter filter;
    filter.setSourceModel(&model);
    filter.sort(candidateColumn("Total saving (µs)"), Qt::DescendingOrder);
    double last = 1e300;
    for (int r = 0; r < filter.rowCount(); ++r) {
      const int index = filter.index(r, 0).data(CandidatesModel::CandidateIndexRole).toInt();
      const double v = six_->report.candidates[static_cast<size_t>(index)].total_saving_ns;
      QVERIFY(v <= last);
      last = v;
    }
  }

  void detailModelPassesTheModelTesterAndNamesTheCost() {
    DetailModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const analyzer::Candidate& c = emu_->report.candidates.front();
    model.setTree(candidateDetail(*emu_, emu_->report, c));
    QVERIFY(model.rowCount() >= 5);
    QStringList sections;
    for (int r = 0; r < model.rowCount(); ++r) sections << model.index(r, 0).data().toString();
    QVERIFY(sections.contains("Members"));
    QVERIFY(sections.contains("Dependency edges"));
    QVERIFY(sections.contains("Legality"));
    QVERIFY(sections.filter("Cost on " + QString::fromStdString(emu_->report.gpu.short_name)).size() == 1);
    const QModelIndex members = model.index(sections.indexOf("Members"), 0);
    QCOMPARE(model.rowCount(members), static_cast<int>(c.names.size()));
    const QModelIndex edges = model.index(sections.indexOf("Dependency edges"), 0);
    QCOMPARE(model.rowCount(edges), static_cast<int>(c.edges.size()));
    model.setTree(launchDetail(*alexnet_, alexnet_->input.trace.launches.front().id));
    QCOMPARE(model.rowCount(), 1);
    // A launch of a PyTorch trace names the operator that launched it.
    const core::Launch& gemm = bert_->input.trace.launches.front();
    model.setTree(launchDetail(*bert_, gemm.id));
    QStringList rows;
    for (int r = 0; r < model.rowCount(model.index(0, 0)); ++r) {
      const QModelIndex key = model.index(r, 0, model.index(0, 0));
      if (key.data().toString() == "operator") rows << model.index(r, 1, model.index(0, 0)).data().toString();
    }
    QCOMPARE(rows.size(), 1);
    QVERIFY2(rows.front().startsWith("aten::"), qPrintable(rows.front()));
    model.setTree({});
    QCOMPARE(model.rowCount(), 0);
  }

  // On a PyTorch trace the members' nodes are named by their operators.
  void graphNodesOfMembersNameTheirOperators() {
    const DependencyContext ctx = buildDependencyContext(bert_->input.trace);
    const analyzer::Candidate& c = bert_->report.candidates.front();
    std::vector<std::string> labels;
    for (const analyzer::MemberContext& m : c.members) labels.push_back(m.label);
    QVERIFY(!labels.empty() && labels.front().rfind("aten::", 0) == 0);
    const auto ops = neighbourhood(ctx.graph, c.occurrences.front(), 1, 24);
    auto laid = layoutGraph(ctx.graph, bert_->input.trace, ctx.catalog, ops, c.occurrences.front(), 48, labels);
    QVERIFY2(laid.ok(), laid.ok() ? "" : laid.status().message().c_str());
    std::set<std::string> named;
    for (const GraphNode& n : laid->nodes) {
      if (n.member) named.insert(n.label.substr(n.label.find(' ') + 1));  // after "#op "
    }
    QCOMPARE(named, std::set<std::string>(labels.begin(), labels.end()));
  }

  void graphvizLaysOutACandidateNeighbourhood() {
    const DependencyContext ctx = buildDependencyContext(emu_->input.trace);
    const analyzer::Candidate& c = emu_->report.candidates.front();
    size_t omitted = 0;
    const auto ops = neighbourhood(ctx.graph, c.occurrences.front(), 1, 24, &omitted);
    QVERIFY(ops.size() >= c.occurrences.front().size());
    auto laid = layoutGraph(ctx.graph, emu_->input.trace, ctx.catalog, ops, c.occurrences.front());
    QVERIFY2(laid.ok(), laid.ok() ? "" : laid.status().message().c_str());
    QCOMPARE(laid->nodes.size(), ops.size());
    QVERIFY(laid->width > 0 && laid->height > 0);
    size_t members = 0;
    std::set<std::pair<int, int>> centres;
    for (const GraphNode& n : laid->nodes) {
      members += n.member;
      QVERIFY(n.center.x >= 0 && n.center.x <= laid->width && n.center.y >= 0 && n.center.y <= laid->height);
      centres.insert({static_cast<int>(n.center.x), static_cast<int>(n.center.y)});
    }
    QCOMPARE(members, c.occurrences.front().size());
    QCOMPARE(centres.size(), laid->nodes.size());  // no two nodes on top of each other
    QVERIFY(!laid->edges.empty());
    for (const GraphEdge& e : laid->edges) {
      QVERIFY(e.spline.size() >= 4);
      QVERIFY(QString::fromStdString(e.label).startsWith(analyzer::edgeKindName(e.kind)));
      QVERIFY(!e.reason.empty());
    }
    // A dot layout is top-down: an edge's target sits below its source.
    for (const GraphEdge& e : laid->edges) QVERIFY(laid->nodes[e.to].center.y > laid->nodes[e.from].center.y);
  }

  void ptxOfARecordedKernelIsItsEntry() {
    const analyzer::Candidate& c = emu_->report.candidates.front();
    auto ptx = kernelPtx(emu_->input.trace, c.function_ids.front());
    QVERIFY2(ptx.ok(), ptx.ok() ? "" : ptx.status().message().c_str());
    QVERIFY(QString::fromStdString(*ptx).contains(".entry " + QString::fromStdString(c.mangled_names.front())));
    auto none = kernelPtx(alexnet_->input.trace, alexnet_->input.trace.functions.front().id);
    QVERIFY(!none.ok());  // Kineto traces carry no module images
  }

  void ptxHighlighterTellsTokensApart() {
    using T = PtxHighlighter::Token;
    const auto t = PtxHighlighter::tokens("\t@%p1 ld.global.f32 %f1, [%rd4+8]; // load");
    QVERIFY(t.size() >= 5);
    QCOMPARE(t[0].first, T::kPredicate);
    QCOMPARE(t[0].second, QString("@%p1"));
    QCOMPARE(t[1].first, T::kInstruction);
    QCOMPARE(t[1].second, QString("ld.global.f32"));
    QCOMPARE(t[2].first, T::kRegister);
    QCOMPARE(t.back().first, T::kComment);
    const auto d = PtxHighlighter::tokens(".visible .entry _Z3addPf(");
    QCOMPARE(d[0].first, T::kDirective);
    QCOMPARE(d[1].second, QString(".entry"));
    const auto l = PtxHighlighter::tokens("$L__BB0_2:");
    QCOMPARE(l[0].first, T::kLabel);
  }

  void reviewDecisionsAreStoredInTheTraceAndReloaded() {
    QTemporaryDir dir;
    const QString copy = testing::scratchCopy(dir, emulatorTrace());
    auto session = load(copy);
    {
      ReviewBook book;
      QCOMPARE(book.setSession(session), QString());
      QVERIFY(book.decisions().empty());
      QSignalSpy changed(&book, &ReviewBook::changed);
      QCOMPARE(book.decide(0, core::ReviewVerdict::kAccepted, "fuse it"), QString());
      QCOMPARE(changed.count(), 1);
      QCOMPARE(book.accepted(), std::vector<int>{0});
    }
    ReviewBook again;
    QCOMPARE(again.setSession(load(copy)), QString());
    const core::ReviewDecision* d = again.decisionFor(0);
    QVERIFY(d);
    QCOMPARE(d->verdict, core::ReviewVerdict::kAccepted);
    QCOMPARE(QString::fromStdString(d->note), QString("fuse it"));
    // An imported trace cannot hold decisions: the message says what to do.
    QVERIFY(!six_->report.candidates.empty());
    ReviewBook imported;
    imported.setSession(six_);
    const QString why = imported.decide(0, core::ReviewVerdict::kRejected, "");
    QVERIFY(why.contains("Save as kfuse trace"));
    // ...once saved as a kfuse trace it can.
    const QString saved = dir.filePath("six_streams.sqlite");
    QVERIFY(saveAsKfuseTrace(*six_, saved.toStdString()).ok());
    auto resaved = load(saved);
    QVERIFY(resaved->isKfuseTrace());
    // A kfuse trace keeps the GPU work but not the profile's CPU operators, so the analysis (operator context,
    // kernel families' links) may find other candidates than the imported profile did; it finds some.
    QVERIFY(!resaved->report.candidates.empty());
    ReviewBook kept;
    kept.setSession(resaved);
    QCOMPARE(kept.decide(0, core::ReviewVerdict::kRejected, "no"), QString());
    QCOMPARE(ReviewBook().setSession(load(saved)), QString());
  }

  // The recording's chain scale -> add -> relu -> mul and its pair mul + scale want the same launches: accepting
  // both is refused with the analyzer's reason, and nothing of a refused batch is stored.
  void acceptingTwoConflictingCandidatesIsRefusedWithTheReason() {
    QTemporaryDir dir;
    const QString copy = testing::scratchCopy(dir, emulatorTrace());
    auto session = load(copy);
    const auto& cands = session->report.candidates;
    int a = -1, b = -1;
    for (size_t i = 0; i < cands.size() && a < 0; ++i) {
      if (cands[i].conflicts_with.empty()) continue;
      for (size_t j = 0; j < cands.size(); ++j) {
        if (cands[j].rank == cands[i].conflicts_with.front()) {
          a = static_cast<int>(i);
          b = static_cast<int>(j);
        }
      }
    }
    QVERIFY2(a >= 0 && b >= 0, "the recording has two candidates that share a launch");
    const analyzer::Candidate& ca = cands[static_cast<size_t>(a)];
    const analyzer::Candidate& cb = cands[static_cast<size_t>(b)];
    const QString b_against_a = QString::fromStdString(analyzer::candidateConflictText(cb, ca));
    QVERIFY(b_against_a.startsWith("shares "));
    QVERIFY(b_against_a.contains(QString("with #%1 (launch id").arg(ca.rank)));

    ReviewBook book;
    QCOMPARE(book.setSession(session), QString());
    QSignalSpy changed(&book, &ReviewBook::changed);
    // Both at once: refused, neither stored.
    const QString both = book.decide({a, b}, core::ReviewVerdict::kAccepted, "fuse both");
    QVERIFY(both.startsWith("None of the 2 candidates accepted"));
    QVERIFY2(both.contains(b_against_a), qPrintable(both));
    QCOMPARE(changed.count(), 0);
    QVERIFY(book.decisions().empty());
    QVERIFY(core::readReviewDecisions(copy.toStdString())->empty());

    // One, then the other: the second is refused, naming the accepted one and the shared launches.
    QCOMPARE(book.decide(a, core::ReviewVerdict::kAccepted, "the chain"), QString());
    const QString second = book.decide(b, core::ReviewVerdict::kAccepted, "the pair");
    QVERIFY(second.startsWith("Not accepted"));
    QVERIFY2(second.contains(QString("#%1 (%2) %3").arg(cb.rank).arg(candidateMembers(cb)).arg(b_against_a)),
             qPrintable(second));
    QVERIFY2(second.contains(QString("#%1 is accepted").arg(ca.rank)), qPrintable(second));
    QVERIFY(!book.decisionFor(b));
    QCOMPARE(book.accepted(), std::vector<int>{a});
    QVERIFY(book.acceptedSetConflicts().empty());
    // Rejecting both together is never refused; accepting the pair then succeeds.
    QCOMPARE(book.decide({a, b}, core::ReviewVerdict::kRejected, "later"), QString());
    QCOMPARE(book.decisionFor(a)->verdict, core::ReviewVerdict::kRejected);
    QCOMPARE(QString::fromStdString(book.decisionFor(b)->note), QString("later"));
    QCOMPARE(book.decide(b, core::ReviewVerdict::kAccepted, "the pair"), QString());
    QCOMPARE(book.accepted(), std::vector<int>{b});

    // The conflicts column: the chain now conflicts with an accepted candidate, the accepted pair with none.
    CandidatesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSession(session);
    model.setDecisions(book.decisions());
    const QModelIndex chain = model.index(a, model.conflictColumn());
    QCOMPARE(chain.data(CandidatesModel::ConflictRole).toList(), QVariantList{cb.rank});
    QCOMPARE(chain.data().toString(), QString("#%1 (accepted)").arg(cb.rank));
    QVERIFY(chain.data(Qt::ForegroundRole).isValid());
    QVERIFY(chain.data(Qt::ToolTipRole)
                .toString()
                .contains(QString::fromStdString(analyzer::candidateConflictText(ca, cb))));
    const QModelIndex pair = model.index(b, model.conflictColumn());
    QVERIFY(pair.data(CandidatesModel::ConflictRole).toList().isEmpty());
    QCOMPARE(pair.data().toString(), QString("#%1").arg(ca.rank));
    QVERIFY(!pair.data(Qt::ForegroundRole).isValid());
    QCOMPARE(model.headerData(model.conflictColumn(), Qt::Horizontal).toString(), QString("Conflicts"));

    // Decisions stored by another tool can make the accepted set inconsistent: the book says which pair.
    core::ReviewDecision forced;
    forced.candidate_key = session->candidate_keys[static_cast<size_t>(a)];
    forced.rank = ca.rank;
    QVERIFY(core::storeReviewDecision(copy.toStdString(), forced).ok());
    ReviewBook reread;
    QCOMPARE(reread.setSession(session), QString());
    const std::vector<ReviewConflict> inconsistent = reread.acceptedSetConflicts();
    QCOMPARE(inconsistent.size(), size_t{1});
    QVERIFY2(inconsistent.front().reason.contains(QString("%1; both are accepted").arg(b_against_a)),
             qPrintable(inconsistent.front().reason));
  }

  void aFailedImportReportsTheImportersMessage() {
    SessionLoader loader;
    QSignalSpy failed(&loader, &SessionLoader::failed);
    QSignalSpy loaded(&loader, &SessionLoader::loaded);
    const QString cpu_only = sharedTrace("kineto/hta_cpu_only.json.gz");
    loader.load(cpu_only);
    loader.wait();
    QCOMPARE(failed.count(), 1);
    QCOMPARE(loaded.count(), 0);
    const QString message = failed.front().at(1).toString();
    QVERIFY2(message.contains(QString::fromUtf8(analyzer::kNoKernelsMessage.data(),
                                                static_cast<qsizetype>(analyzer::kNoKernelsMessage.size()))),
             qPrintable(message));
    QVERIFY(message.contains(cpu_only));
    loader.load("/nonexistent/trace.json");
    loader.wait();
    QCOMPARE(failed.count(), 2);
    QVERIFY(failed.back().at(1).toString().contains("/nonexistent/trace.json"));
  }

  void loadSessionStopsWithACancelledStatusWhenTheFlagIsSet() {
    std::atomic<bool> flag{true};
    LoadControl control;
    control.cancel = &flag;
    auto s = loadSession(sharedTrace("kineto/hta_six_streams_rank0.json.gz").toStdString(), {}, control);
    QVERIFY(!s.ok());
    QVERIFY2(isCancelled(s.status()), s.status().message().c_str());
  }

  void aCancelledLoadDeliversNothing() {
    SessionLoader loader;
    QSignalSpy loaded(&loader, &SessionLoader::loaded);
    QSignalSpy cancelled(&loader, &SessionLoader::cancelled);
    QSignalSpy progress(&loader, &SessionLoader::progress);
    loader.load(sharedTrace("kineto/hta_six_streams_rank0.json.gz"));
    loader.cancel();
    loader.wait();
    QCOMPARE(cancelled.count(), 1);
    QCOMPARE(loaded.count(), 0);
    // The next load works and reports progress up to 100.
    loader.load(sharedTrace("kineto/hta_simple_add.json.gz"));
    loader.wait();
    QCOMPARE(loaded.count(), 1);
    QVERIFY(!progress.isEmpty());
    QCOMPARE(progress.back().at(0).toInt(), 100);
  }

  // `kfuse demo`'s two recordings: the plan's fused kernel only after, each replaced kernel's launches down by the
  // plan's occurrences; checked against the traces read directly, the plan's plan.json and the injector's own
  // statistics (run.json).
  void theDemosRecordingsAreAlignedByKernelAndPlan() {
    auto c = loadComparison(testing::demoFile("before.sqlite").toStdString(),
                            testing::demoFile("after.sqlite").toStdString());
    QVERIFY2(c.ok(), c.status().message().c_str());
    const auto before = launchesPerKernel(testing::demoFile("before.sqlite"));
    const auto after = launchesPerKernel(testing::demoFile("after.sqlite"));
    const nlohmann::json stats = readJson(testing::demoFile("run.json"));
    const nlohmann::json plan = readJson(testing::demoFile("plans/candidate-1/plan.json"));

    QCOMPARE(c->launches_before, stats["launches_seen"].get<int64_t>());
    QCOMPARE(c->launches_after, stats["launches_issued"].get<int64_t>());
    QCOMPARE(c->plans.size(), size_t{1});
    const AppliedPlan& p = c->plans.front();
    QCOMPARE(p.name, std::string("candidate-1"));
    QCOMPARE(p.fused_kernel, stats["plans"][0]["fused_kernel"].get<std::string>());
    const int64_t occurrences = stats["plans"][0]["occurrences_fused"].get<int64_t>();
    QVERIFY(occurrences > 0);
    QCOMPARE(p.occurrences, occurrences);
    QCOMPARE(p.candidate_rank, plan["candidate_rank"].get<int>());
    std::vector<std::string> pattern;
    for (const auto& k : plan["pattern"]["kernels"]) pattern.push_back(k["mangled_name"].get<std::string>());
    QCOMPARE(p.replaced_kernels, pattern);  // the example's kernels have C names: mangled = shown
    QCOMPARE(p.replacedLaunches(), occurrences * static_cast<int64_t>(pattern.size()));

    // The fused kernel: after only, one launch per occurrence.
    const KernelDelta* fused = findKernel(*c, p.fused_kernel);
    QVERIFY(fused);
    QCOMPARE(fused->presence(), Presence::kOnlyAfter);
    QCOMPARE(fused->after.count, occurrences);
    QCOMPARE(fused->after.count, after.at(p.fused_kernel).launches);
    QCOMPARE(fused->fused_by, std::string("candidate-1"));
    // Each replaced kernel: as many launches before as the trace holds, fewer after by the occurrences replaced.
    for (const std::string& name : pattern) {
      const KernelDelta* k = findKernel(*c, name);
      QVERIFY2(k, name.c_str());
      QCOMPARE(k->before.count, before.at(name).launches);
      const int64_t left = after.count(name) ? after.at(name).launches : 0;
      QCOMPARE(k->after.count, left);
      QCOMPARE(k->replaced, occurrences);
      QCOMPARE(k->before.count - k->replaced, k->after.count);
    }
    QCOMPARE(c->kernels.size(), pattern.size() + 1);

    // Times as the traces record them: on the CPU stand-in none (nothing made up, and the notes say so); on a GPU
    // the sums of the launches' GPU durations.
    bool timed = false;
    for (const KernelDelta& k : c->kernels) {
      const auto recorded = [&](const std::map<std::string, KernelCount>& trace) {
        auto it = trace.find(k.name);
        return it == trace.end() ? core::kNoTime : it->second.gpu_ns;
      };
      QCOMPARE(k.before.hasTime() ? k.before.total_ns : core::kNoTime, recorded(before));
      QCOMPARE(k.after.hasTime() ? k.after.total_ns : core::kNoTime, recorded(after));
      QCOMPARE(k.before.median_ns == core::kNoTime, !k.before.hasTime());
      timed = timed || k.before.hasTime() || k.after.hasTime();
    }
    QCOMPARE(c->before_timed || c->after_timed, timed);
    if (!c->before_timed && !c->after_timed) {
      QCOMPARE(c->notes.size(), size_t{1});
      QVERIFY2(QString::fromStdString(c->notes.front()).contains("launch count only"), c->notes.front().c_str());
    }
    QVERIFY(c->ranges.empty());  // the example marks no NVTX ranges
  }

  void theComparisonTablesShowTheDifferences() {
    auto loaded = loadComparison(testing::demoFile("before.sqlite").toStdString(),
                                 testing::demoFile("after.sqlite").toStdString());
    QVERIFY2(loaded.ok(), loaded.status().message().c_str());
    auto c = std::make_shared<const Comparison>(std::move(*loaded));
    using Table = ComparisonModel::Table;
    for (Table t : {Table::kKernels, Table::kRanges, Table::kPlans}) {
      ComparisonModel model(t);
      QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
      model.setComparison(c);
      model.setComparison(nullptr);
      model.setComparison(c);
      QCOMPARE(model.columnCount(), static_cast<int>(ComparisonModel::columns(t).size()));
    }
    ComparisonModel kernels(Table::kKernels);
    kernels.setComparison(c);
    const auto cell = [&](const std::string& kernel, const char* header, int role = Qt::DisplayRole) {
      for (int r = 0; r < kernels.rowCount(); ++r) {
        if (kernels.index(r, 0).data().toString().toStdString() == kernel) {
          return kernels.index(r, ComparisonModel::column(Table::kKernels, header)).data(role);
        }
      }
      return QVariant();
    };
    const AppliedPlan& p = c->plans.front();
    const std::string replaced = p.replaced_kernels.front();
    const int64_t n = p.occurrences;
    QCOMPARE(cell(replaced, "Launches before").toLongLong(), n);
    QCOMPARE(cell(replaced, "Δ launches").toString(), QString("-%1 (-100%)").arg(n));
    QCOMPARE(cell(replaced, "Replaced").toLongLong(), n);
    if (!c->before_timed) QCOMPARE(cell(replaced, "GPU time before").toString(), QString("n/a"));
    QCOMPARE(cell(replaced, "Δ median").toString(), QString("n/a"));  // no launch of it after
    QCOMPARE(cell(p.fused_kernel, "In").toString(), QString("fused: candidate-1"));
    QCOMPARE(cell(p.fused_kernel, "Δ launches").toString(), QString("+%1 (new)").arg(n));
    QCOMPARE(cell(p.fused_kernel, "Replaced").toString(), QString());

    // Sorted by the change in launches: the replaced kernels first, the fused kernel last.
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&kernels);
    proxy.setSortRole(ComparisonModel::SortRole);
    proxy.sort(ComparisonModel::column(Table::kKernels, "Δ launches"), Qt::AscendingOrder);
    QCOMPARE(proxy.index(proxy.rowCount() - 1, 0).data().toString().toStdString(), p.fused_kernel);
    QCOMPARE(proxy.index(0, ComparisonModel::column(Table::kKernels, "Δ launches"))
                 .data(ComparisonModel::SortRole)
                 .toLongLong(),
             -n);

    ComparisonModel plans(Table::kPlans);
    plans.setComparison(c);
    QCOMPARE(plans.rowCount(), 1);
    QCOMPARE(plans.index(0, ComparisonModel::column(Table::kPlans, "Replaced kernels")).data().toString(),
             QString::fromStdString(p.replaced_kernels.front()) + " → " +
                 QString::fromStdString(p.replaced_kernels[1]) + " → " + QString::fromStdString(p.replaced_kernels[2]) +
                 " → " + QString::fromStdString(p.replaced_kernels[3]));
    QCOMPARE(plans.index(0, ComparisonModel::column(Table::kPlans, "Launches replaced")).data().toLongLong(), 4 * n);
  }

  void differencesReadAsSignedCountsAndPercent() {
    QCOMPARE(countDeltaText(12, 3), QString("-9 (-75.0%)"));
    QCOMPARE(countDeltaText(3, 3), QString("0"));
    QCOMPARE(countDeltaText(0, 3), QString("+3 (new)"));
    QCOMPARE(countDeltaText(4, 0), QString("-4 (-100%)"));
    QCOMPARE(timeDeltaText(2'000, 1'500), QString("-500 ns (-25.0%)"));
    QCOMPARE(timeDeltaText(1'000'000, 3'000'000), QString("+2.000 ms (+200%)"));
    QCOMPARE(timeDeltaText(core::kNoTime, 5), QString("n/a"));
  }

  // NVTX ranges of two recordings of one program: aligned by their name path (nesting on the thread), with the
  // launches made inside each and their recorded wall-clock durations.
  void rangesAreAlignedByNamePath() {
    auto c = loadComparison(testing::nvtxTraceBefore().toStdString(), testing::nvtxTraceAfter().toStdString());
    QVERIFY2(c.ok(), c.status().message().c_str());
    // nvtx_ranges.cpp: "setup" around the driver's set-up; "async" (start/end) around "step" (one launch, then
    // "inner" with one) and "wide" (one launch); never-closed and before-the-driver ranges are not recorded.
    const std::map<std::string, int64_t> launches = {
        {"setup", 0}, {"async", 3}, {"async / step", 2}, {"async / step / inner", 1}, {"async / wide", 1}};
    QCOMPARE(c->ranges.size(), launches.size());
    for (const auto& [path, n] : launches) {
      const RangeDelta* r = findRange(*c, path);
      QVERIFY2(r, path.c_str());
      QCOMPARE(r->presence(), Presence::kBoth);
      QCOMPARE(r->before.count, int64_t{1});
      QCOMPARE(r->after.count, int64_t{1});
      QCOMPARE(r->launches_before, n);
      QCOMPARE(r->launches_after, n);
      QCOMPARE(r->before.timed, int64_t{1});
      QVERIFY(r->before.total_ns > 0 && r->after.total_ns > 0);
      QCOMPARE(r->before.median_ns, r->before.total_ns);  // one instance
    }
    // An enclosing range lasts at least as long as what it encloses.
    QVERIFY(findRange(*c, "async / step")->before.total_ns >= findRange(*c, "async / step / inner")->before.total_ns);
    QVERIFY(c->plans.empty());  // recorded without `kfuse run`
    ComparisonModel ranges(ComparisonModel::Table::kRanges);
    QAbstractItemModelTester tester(&ranges, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ranges.setComparison(std::make_shared<const Comparison>(std::move(*c)));
    QCOMPARE(ranges.rowCount(), static_cast<int>(launches.size()));
  }

  void aTraceThatCannotBeOpenedIsNamedWithItsSide() {
    const std::string missing = "/nonexistent/kfuse-missing.sqlite";
    const std::string after = testing::demoFile("after.sqlite").toStdString();
    auto c = loadComparison(missing, after);
    QVERIFY(!c.ok());
    QVERIFY2(c.status().message().find("the trace before") != std::string::npos, c.status().message().c_str());
    QVERIFY2(c.status().message().find(missing) != std::string::npos, c.status().message().c_str());
    // Not a trace at all: the plan's JSON.
    const std::string not_trace = testing::demoFile("run.json").toStdString();
    c = loadComparison(after, not_trace);
    QVERIFY(!c.ok());
    QVERIFY2(c.status().message().find("the trace after") != std::string::npos, c.status().message().c_str());
    QVERIFY2(c.status().message().find(not_trace) != std::string::npos, c.status().message().c_str());
  }

  void planDirectoriesAreReadFromTheRecordedCommandLine() {
    QCOMPARE(planDirsOfCommandLine("/b/bin/kfuse run --plan /d/plans/candidate-1 --plan=/d/p2 --stats s.json -- "
                                   "./app --plan /not/kfuse"),
             (std::vector<std::string>{"/d/plans/candidate-1", "/d/p2"}));
    QCOMPARE(planDirsOfCommandLine("kfuse -q run --plan '/my plans/candidate-1' -- ./app"),
             std::vector<std::string>{"/my plans/candidate-1"});
    QVERIFY(planDirsOfCommandLine("./app run --plan /x").empty());
    QVERIFY(planDirsOfCommandLine("").empty());
    // A plan that is no longer there: a note naming it, no plan row, the fused kernel still listed.
    core::Trace after;
    after.metadata.command_line = "kfuse run --plan /nonexistent/candidate-9 -- ./app";
    const std::vector<PlanInput> plans = readRecordedPlans(after, "/nonexistent/after.sqlite");
    QCOMPARE(plans.size(), size_t{1});
    QVERIFY(!plans.front().error.empty());
    const Comparison c = compareTraces(core::Trace{}, after, plans);
    QVERIFY(c.plans.empty());
    QVERIFY(!c.notes.empty());
    QVERIFY2(QString::fromStdString(c.notes.front()).contains("/nonexistent/candidate-9"), c.notes.front().c_str());
  }

 private:
  std::shared_ptr<const Session> bert_;
  std::shared_ptr<const Session> alexnet_, six_, emu_;
};

QTEST_MAIN(GuiModelsTest)
#include "gui_models_test.moc"
