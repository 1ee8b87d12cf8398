#include "roofline_view.h"

#include <QGraphicsLineItem>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "kfuse/gui/timeline_painter.h"

namespace kfuse::gui {

RooflineView::RooflineView(QWidget* parent) : QWidget(parent) {
  view_ = new QChartView(new QChart, this);
  view_->setRenderHint(QPainter::Antialiasing);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(note_);
  layout->addWidget(view_, 1);
  connect(view_->chart(), &QChart::plotAreaChanged, this, [this] { drawArrows(); });
}

void RooflineView::setSession(std::shared_ptr<const Session> session) {
  session_ = std::move(session);
  candidate_ = -1;
  if (session_) report_ = session_->report;
  rebuild();
}

void RooflineView::setReport(const analyzer::Report& report) {
  report_ = report;
  rebuild();
}

void RooflineView::showCandidate(int index) {
  candidate_ = index;
  rebuild();
}

void RooflineView::rebuild() {
  QChart* chart = view_->chart();
  for (QGraphicsItem* i : arrow_items_) delete i;
  arrow_items_.clear();
  arrows_.clear();
  chart->removeAllSeries();
  for (QAbstractAxis* a : chart->axes()) {
    chart->removeAxis(a);
    delete a;
  }
  member_points_ = 0;
  has_predicted_ = false;
  if (!session_) return;
  const core::GpuSpec& gpu = report_.gpu;
  chart->setTitle(tr("Roofline: %1").arg(QString::fromStdString(gpu.marketing_name)));

  // Axis ranges from the points and the ridge.
  double xmin = 1e-2, xmax = 1e3, ymin = 1e9, ymax = std::max({gpu.fp32_flops, gpu.fp16_flops, 1e12}) * 2;
  auto grow = [&](double x, double y) {
    if (x > 0) xmin = std::min(xmin, x / 2), xmax = std::max(xmax, x * 2);
    if (y > 0) ymin = std::min(ymin, y / 2), ymax = std::max(ymax, y * 2);
  };
  for (const analyzer::KernelRow& k : report_.kernel_table) {
    if (k.bytes > 0 && k.flops > 0) grow(k.flops / k.bytes, k.ns > 0 ? k.flops / (k.ns * 1e-9) : 0);
  }

  auto* ax = new QLogValueAxis;
  ax->setTitleText(tr("arithmetic intensity (FLOP / DRAM byte)"));
  ax->setBase(10);
  ax->setLabelFormat("%g");
  ax->setRange(xmin, xmax);
  auto* ay = new QLogValueAxis;
  ay->setTitleText(tr("FLOP/s"));
  ay->setBase(10);
  ay->setLabelFormat("%.0e");
  ay->setRange(ymin, ymax);
  chart->addAxis(ax, Qt::AlignBottom);
  chart->addAxis(ay, Qt::AlignLeft);
  auto attach = [&](QAbstractSeries* s) {
    chart->addSeries(s);
    s->attachAxis(ax);
    s->attachAxis(ay);
  };

  // Roofs: min(peak, bandwidth x intensity) for each precision the GPU has.
  struct Roof {
    const char* name;
    double peak;
    QColor color;
  };
  const Roof roofs[] = {{"FP16 peak", gpu.fp16_flops, QColor(0x60, 0xa0, 0x60)},
                        {"FP32 peak", gpu.fp32_flops, QColor(0x20, 0x20, 0x20)},
                        {"FP64 peak", gpu.fp64_flops, QColor(0x80, 0x80, 0xc0)}};
  const double bw = gpu.dram_bandwidth_bytes_per_s;
  for (const Roof& r : roofs) {
    if (r.peak <= 0 || bw <= 0) continue;
    auto* s = new QLineSeries;
    s->setName(QString("%1 (%2 TFLOP/s)").arg(r.name).arg(r.peak / 1e12, 0, 'f', 1));
    const double ridge = r.peak / bw;
    s->append(xmin, std::max(ymin, bw * xmin));
    if (ridge > xmin && ridge < xmax) s->append(ridge, r.peak);
    s->append(xmax, std::min(r.peak, bw * xmax));
    QPen pen(r.color, r.peak == gpu.fp32_flops ? 2 : 1);
    if (r.peak != gpu.fp32_flops) pen.setStyle(Qt::DashLine);
    s->setPen(pen);
    attach(s);
  }

  auto* kernels = new QScatterSeries;
  kernels->setName(tr("kernels (achieved)"));
  kernels->setMarkerSize(7);
  kernels->setColor(QColor(0x60, 0x70, 0x90));
  kernels->setBorderColor(Qt::transparent);
  std::map<std::string, QPointF> by_name;
  // The per-kernel table's totals: measured GPU time, or the cost model's estimate where the trace has none (an
  // emulator recording); the report's own roofline points leave those out.
  bool on_roof = false;
  for (const analyzer::KernelRow& k : report_.kernel_table) {
    if (k.bytes <= 0 || k.flops <= 0) continue;
    double ns = k.ns;
    if (ns <= 0) {
      // No time at all (an emulator recording): the kernel is placed on the roof, at the time the roofline allows.
      if (gpu.dram_bandwidth_bytes_per_s <= 0 || gpu.fp32_flops <= 0) continue;
      ns = std::max(k.bytes / gpu.dram_bandwidth_bytes_per_s, k.flops / gpu.fp32_flops) * 1e9;
      on_roof = true;
    }
    const QPointF p(k.flops / k.bytes, k.flops / (ns * 1e-9));
    kernels->append(p);
    by_name[k.name] = p;
  }
  if (on_roof) {
    kernels->setName(tr("kernels (no GPU times in the trace: placed on the roof)"));
  } else if (report_.gpu_busy_estimated) {
    kernels->setName(tr("kernels (time estimated: the trace has no GPU times)"));
  }
  attach(kernels);

  QString note;
  const analyzer::Candidate* c = candidate_ >= 0 && static_cast<size_t>(candidate_) < report_.candidates.size()
                                     ? &report_.candidates[candidate_]
                                     : nullptr;
  if (c) {
    const QColor color = TimelinePainter::candidateColor(candidate_);
    auto* members = new QScatterSeries;
    members->setName(tr("#%1 members").arg(c->rank));
    members->setMarkerSize(11);
    members->setColor(color);
    members->setBorderColor(Qt::black);
    for (const std::string& n : c->names) {
      auto it = by_name.find(n);
      if (it == by_name.end()) continue;
      members->append(it->second);
      ++member_points_;
    }
    attach(members);
    if (c->cost.bytes_after > 0 && c->cost.flops > 0 && c->cost.fused_ns > 0) {
      const QPointF predicted(c->cost.flops / c->cost.bytes_after, c->cost.flops / (c->cost.fused_ns * 1e-9));
      auto* fused = new QScatterSeries;
      fused->setName(tr("#%1 fused (predicted)").arg(c->rank));
      fused->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
      fused->setMarkerSize(13);
      fused->setColor(color.darker(130));
      fused->setBorderColor(Qt::black);
      fused->append(predicted);
      attach(fused);
      has_predicted_ = true;
      for (const QPointF& m : members->points()) arrows_.emplace_back(m, predicted);
      if (predicted.x() < xmin || predicted.x() > xmax || predicted.y() < ymin || predicted.y() > ymax) {
        ax->setRange(std::min(xmin, predicted.x() / 2), std::max(xmax, predicted.x() * 2));
        ay->setRange(std::min(ymin, predicted.y() / 2), std::max(ymax, predicted.y() * 2));
      }
    }
    if (member_points_ == 0) {
      note = tr("Candidate #%1: its kernels have no roofline point (the trace has no byte or FLOP counts for them: "
                "%2 bytes, %3 FLOP).")
                 .arg(c->rank)
                 .arg(QString::fromStdString(c->cost.bytes_source))
                 .arg(QString::fromStdString(c->cost.flops_source));
    } else if (!has_predicted_) {
      note = tr("Candidate #%1: no predicted point (no FLOP or byte estimate for the fused kernel).").arg(c->rank);
    } else {
      note = tr("Candidate #%1: arrows lead from its kernels to the fused kernel's predicted point.").arg(c->rank);
    }
  } else {
    note = kernels->count() == 0
               ? tr("No kernel of this trace has both a byte and a FLOP count, so there is nothing to place.")
               : tr("%1 kernels. Select a candidate to see its fused kernel's predicted point.").arg(kernels->count());
  }
  note_->setText(note);
  drawArrows();
}

void RooflineView::drawArrows() {
  for (QGraphicsItem* i : arrow_items_) delete i;
  arrow_items_.clear();
  QChart* chart = view_->chart();
  if (arrows_.empty() || chart->series().isEmpty()) return;
  QAbstractSeries* series = chart->series().back();
  for (const auto& [from, to] : arrows_) {
    const QPointF a = chart->mapToPosition(from, series);
    const QPointF b = chart->mapToPosition(to, series);
    const QPen pen(QColor(0x20, 0x20, 0x20), 1.5);
    auto* line = new QGraphicsLineItem(QLineF(a, b), chart);
    line->setPen(pen);
    arrow_items_.push_back(line);
    const double angle = std::atan2(b.y() - a.y(), b.x() - a.x());
    QPolygonF head;
    head << b << b - QPointF(std::cos(angle - 0.4) * 10, std::sin(angle - 0.4) * 10)
         << b - QPointF(std::cos(angle + 0.4) * 10, std::sin(angle + 0.4) * 10);
    auto* h = new QGraphicsPolygonItem(head, chart);
    h->setBrush(QColor(0x20, 0x20, 0x20));
    h->setPen(pen);
    arrow_items_.push_back(h);
  }
}

}  // namespace kfuse::gui
