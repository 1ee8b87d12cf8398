#include "roofline_view.h"

#include <QGraphicsLineItem>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "kfuse/gui/roofline_points.h"
#include "kfuse/gui/timeline_painter.h"

namespace kfuse::gui {

namespace {
const QColor kKernelColor(0x60, 0x70, 0x90);
}  // namespace

RooflineView::RooflineView(QWidget* parent) : QWidget(parent) {
  view_ = new QChartView(new QChart, this);
  view_->setRenderHint(QPainter::Antialiasing);
  // At the side, one entry a line: the entries name what the estimates rest on and would be cut short in a row.
  view_->chart()->legend()->setAlignment(Qt::AlignRight);
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
  estimated_points_ = 0;
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
  // The points (kfuse::gui::rooflineChart): counted ones filled, the analyzer's estimates hollow.
  const RooflineChart points = rooflineChart(report_, candidate_);
  for (const RooflineMark& m : points.marks) {
    if (m.role != RooflineRole::kFused) grow(m.intensity, m.flops_per_s);
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

  const QString estimated = QString::fromStdString(points.estimate_legend);
  auto series = [&](const QString& name, qreal size, const QColor& color, bool hollow, bool square) {
    auto* s = new QScatterSeries;
    s->setName(name);
    s->setMarkerSize(size);
    if (square) s->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    if (hollow) {
      s->setBrush(Qt::NoBrush);
      s->setPen(QPen(color, 2));
    } else {
      s->setColor(color);
      s->setBorderColor(color == kKernelColor ? QColor(Qt::transparent) : QColor(Qt::black));
    }
    return s;
  };
  bool on_roof = false;
  for (const RooflineMark& m : points.marks) on_roof |= m.role == RooflineRole::kKernel && m.time_from_roof;
  QString kernels_name = tr("kernels (achieved)");
  if (on_roof) {
    kernels_name = tr("kernels (no GPU times in the trace: placed on the roof)");
  } else if (report_.gpu_busy_estimated) {
    kernels_name = tr("kernels (time estimated: the trace has no GPU times)");
  }
  auto* kernels = series(kernels_name, 7, kKernelColor, false, false);
  auto* kernels_estimated = series(tr("kernels, %1").arg(estimated), 8, kKernelColor, true, false);
  const analyzer::Candidate* c = candidate_ >= 0 && static_cast<size_t>(candidate_) < report_.candidates.size()
                                     ? &report_.candidates[candidate_]
                                     : nullptr;
  const QColor color = TimelinePainter::candidateColor(candidate_);
  const int rank = c ? c->rank : 0;
  auto* members = series(tr("#%1 members").arg(rank), 11, color, false, false);
  auto* members_estimated = series(tr("#%1 members (estimated)").arg(rank), 12, color, true, false);
  QScatterSeries* fused = nullptr;
  for (const RooflineMark& m : points.marks) {
    const QPointF p(m.intensity, m.flops_per_s);
    switch (m.role) {
      case RooflineRole::kKernel: (m.estimated ? kernels_estimated : kernels)->append(p); break;
      case RooflineRole::kMember:
        (m.estimated ? members_estimated : members)->append(p);
        ++member_points_;
        break;
      case RooflineRole::kFused:
        fused = series(
            m.estimated ? tr("#%1 fused (predicted from estimates)").arg(rank) : tr("#%1 fused (predicted)").arg(rank),
            13, color.darker(130), m.estimated, true);
        fused->append(p);
        has_predicted_ = true;
        break;
    }
    if (m.estimated) ++estimated_points_;
  }
  if (fused) {
    const QPointF predicted = fused->points().front();
    for (QScatterSeries* s : {members, members_estimated}) {
      for (const QPointF& m : s->points()) arrows_.emplace_back(m, predicted);
    }
    if (predicted.x() < xmin || predicted.x() > xmax || predicted.y() < ymin || predicted.y() > ymax) {
      ax->setRange(std::min(xmin, predicted.x() / 2), std::max(xmax, predicted.x() * 2));
      ay->setRange(std::min(ymin, predicted.y() / 2), std::max(ymax, predicted.y() * 2));
    }
  }
  // Only the series that hold points (the legend names what is drawn); the fused point's series last, since
  // drawArrows() maps through the last series.
  for (QScatterSeries* s : {kernels, kernels_estimated, members, members_estimated, fused}) {
    if (!s) continue;
    if (s->count() == 0 && !(s == kernels && kernels_estimated->count() == 0)) {
      delete s;
      continue;
    }
    attach(s);
  }
  QString note = QString::fromStdString(points.note);
  if (!estimated.isEmpty()) note += tr(" Hollow points: bytes or FLOPs %1, not counted.").arg(estimated);
  if (!points.fused_legend.empty()) {
    note += tr(" The fused kernel's prediction rests on counts %1.").arg(QString::fromStdString(points.fused_legend));
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
