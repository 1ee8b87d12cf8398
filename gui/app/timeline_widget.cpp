#include "timeline_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "kfuse/gui/candidates_model.h"

namespace kfuse::gui {

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(400, 150);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void TimelineWidget::setSession(std::shared_ptr<const Session> session) {
  session_ = std::move(session);
  highlight_ = {};
  fit();
}

void TimelineWidget::fit() {
  if (!session_) {
    window_ = {};
  } else {
    const auto& t = session_->timeline;
    const double pad = (t.end_ns - t.start_ns) * 0.01;
    window_ = {static_cast<double>(t.start_ns) - pad, static_cast<double>(t.end_ns) + pad, 0};
  }
  emit windowChanged();
  update();
}

void TimelineWidget::setWindow(TimelineWindow w) {
  if (w.t1 - w.t0 < 10) w.t1 = w.t0 + 10;  // 10 ns: the finest zoom
  window_ = w;
  clampScroll();
  emit windowChanged();
  update();
}

void TimelineWidget::zoomAt(double factor, double center) {
  TimelineWindow w = window_;
  w.t0 = center - (center - w.t0) * factor;
  w.t1 = center + (w.t1 - center) * factor;
  setWindow(w);
}

void TimelineWidget::panBy(double ns) {
  TimelineWindow w = window_;
  w.t0 += ns;
  w.t1 += ns;
  setWindow(w);
}

void TimelineWidget::clampScroll() {
  if (!session_) return;
  const int max = std::max(0, TimelinePainter::contentHeight(session_->timeline) - height() + 8);
  window_.scroll_y = std::clamp(window_.scroll_y, 0, max);
}

void TimelineWidget::showCandidate(int index) {
  if (!session_) return;
  const analyzer::Candidate* c = session_->candidate(index);
  if (!c || c->occurrence_launches.empty() || c->inGraphs()) return;  // graph nodes are not on the timeline
  int64_t a = INT64_MAX, b = INT64_MIN;
  std::optional<SliceRef> first;
  for (core::Id id : c->occurrence_launches.front()) {
    auto it = session_->timeline.by_launch.find(id);
    if (it == session_->timeline.by_launch.end()) continue;
    const Slice& s = session_->timeline.slice(it->second);
    a = std::min(a, s.start);
    b = std::max(b, s.end);
    if (!first) first = it->second;
  }
  if (a > b) return;
  TimelineWindow w = window_;
  if (a < w.t0 || b > w.t1 || (b - a) < w.span() / 2000) {
    const double span = std::max<double>(static_cast<double>(b - a) * 8, 2000.0);
    const double mid = (static_cast<double>(a) + static_cast<double>(b)) / 2;
    w.t0 = mid - span / 2;
    w.t1 = mid + span / 2;
  }
  if (first) {
    const int top = TimelinePainter::laneTop(session_->timeline, first->lane);
    if (top - w.scroll_y < TimelinePainter::kRulerHeight || top - w.scroll_y > height() - 30) {
      w.scroll_y = top - TimelinePainter::kRulerHeight - 20;
    }
  }
  setWindow(w);
}

void TimelineWidget::setHighlight(int candidate, core::Id launch) {
  highlight_.candidate = candidate;
  highlight_.launch = launch;
  update();
}

std::optional<SliceRef> TimelineWidget::sliceAt(QPoint pos) const {
  if (!session_) return std::nullopt;
  return painter_.hitTest(pos, size(), session_->timeline, window_);
}

QPoint TimelineWidget::pointOf(core::Id launch) const {
  if (!session_) return {};
  auto it = session_->timeline.by_launch.find(launch);
  if (it == session_->timeline.by_launch.end()) return {-1, -1};
  return pointOf(it->second);
}

QPoint TimelineWidget::pointOf(SliceRef ref) const {
  if (!session_) return {};
  const Slice& s = session_->timeline.slice(ref);
  const double x =
      TimelinePainter::xAt((static_cast<double>(s.start) + static_cast<double>(s.end)) / 2, size(), window_);
  const int y = TimelinePainter::laneTop(session_->timeline, ref.lane) - window_.scroll_y +
                TimelinePainter::laneHeight(session_->timeline.lanes[ref.lane]) / 2;
  return {static_cast<int>(std::lround(x)), y};
}

QString TimelineWidget::describe(SliceRef ref) const {
  if (!session_) return {};
  const TimelineData& t = session_->timeline;
  const Slice& s = t.slice(ref);
  const core::Trace& trace = session_->input.trace;
  QString text = QString::fromStdString(t.labels[s.label]);
  const double dur_us = static_cast<double>(s.end - s.start) / 1000.0;
  const double at_us = static_cast<double>(s.start - t.start_ns) / 1000.0;
  text += QString("\n%1 µs at %2 µs").arg(dur_us, 0, 'f', 2).arg(at_us, 0, 'f', 2);
  switch (s.kind) {
    case SliceKind::kKernel: {
      const core::Launch& l = trace.launches[s.record_index];
      text += QString("\nlaunch %1 · grid (%2,%3,%4) block (%5,%6,%7)")
                  .arg(l.id)
                  .arg(l.grid.x)
                  .arg(l.grid.y)
                  .arg(l.grid.z)
                  .arg(l.block.x)
                  .arg(l.block.y)
                  .arg(l.block.z);
      if (l.registers_per_thread) text += QString(" · %1 regs").arg(l.registers_per_thread);
      if (const analyzer::Candidate* c = session_->candidate(s.candidate)) {
        text += QString("\ncandidate #%1 (%2, %3): %4")
                    .arg(c->rank)
                    .arg(analyzer::fusionKindName(c->fusion))
                    .arg(analyzer::legalityName(c->legality))
                    .arg(candidateMembers(*c));
      }
      break;
    }
    case SliceKind::kMemcpy: text += QString("\n%1 bytes").arg(trace.memcpys[s.record_index].bytes); break;
    case SliceKind::kMemset: text += QString("\n%1 bytes").arg(trace.memsets[s.record_index].bytes); break;
    case SliceKind::kRange:
      text += "\n" + QString::fromStdString(trace.nvtx_ranges[s.record_index].domain);
      if (const analyzer::Candidate* c = session_->candidate(s.candidate)) {
        text += QString("\nholds candidate #%1 (%2)").arg(c->rank).arg(candidateMembers(*c));
      }
      break;
    case SliceKind::kCpuOp: {
      const analyzer::CpuOp& op = session_->input.cpu_ops[s.record_index];
      QStringList dims;
      for (const auto& d : op.input_dims) {
        QStringList one;
        for (int64_t v : d) one << QString::number(v);
        dims << "[" + one.join(", ") + "]";
      }
      if (!dims.isEmpty()) text += "\ninputs " + dims.join(" ");
      if (op.external_id) text += QString("\nExternal id %1").arg(op.external_id);
      if (const analyzer::Candidate* c = session_->candidate(s.candidate)) {
        text += QString("\nlaunched a kernel of candidate #%1 (%2)").arg(c->rank).arg(candidateMembers(*c));
      }
      break;
    }
  }
  return text;
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  if (!session_) {
    p.fillRect(rect(), palette().window());
    p.drawText(rect(), Qt::AlignCenter, tr("Open a kfuse trace, a Kineto JSON or an Nsight Systems export"));
    return;
  }
  stats_ = painter_.paint(p, size(), session_->timeline, window_, highlight_);
}

void TimelineWidget::wheelEvent(QWheelEvent* e) {
  if (!session_) return;
  const double steps = e->angleDelta().y() / 120.0;
  if (e->modifiers() & Qt::ShiftModifier) {
    window_.scroll_y -= static_cast<int>(steps * 40);
    clampScroll();
    update();
  } else {
    zoomAt(std::pow(0.8, steps), TimelinePainter::timeAt(static_cast<int>(e->position().x()), size(), window_));
  }
  e->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* e) {
  press_ = e->pos();
  press_window_ = window_;
  banding_ = e->button() == Qt::RightButton || (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier));
  panning_ = false;
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* e) {
  if (!session_) return;
  if (press_ && (e->buttons() & (Qt::LeftButton | Qt::RightButton))) {
    const QPoint d = e->pos() - *press_;
    if (banding_) {
      highlight_.rubber_band = std::make_pair(std::max(press_->x(), TimelinePainter::kTitleWidth),
                                              std::max(e->pos().x(), TimelinePainter::kTitleWidth));
      update();
      return;
    }
    if (panning_ || d.manhattanLength() > 4) {
      panning_ = true;
      TimelineWindow w = press_window_;
      const double ns_per_px = w.span() / std::max(1, width() - TimelinePainter::kTitleWidth);
      w.t0 -= d.x() * ns_per_px;
      w.t1 -= d.x() * ns_per_px;
      w.scroll_y -= d.y();
      setWindow(w);
      return;
    }
  }
  const auto hit = sliceAt(e->pos());
  if (hit.has_value() != highlight_.hover.has_value() ||
      (hit && (hit->lane != highlight_.hover->lane || hit->slice != highlight_.hover->slice))) {
    highlight_.hover = hit;
    update();
  }
  if (hit) {
    QToolTip::showText(e->globalPosition().toPoint(), describe(*hit), this);
  } else {
    QToolTip::hideText();
  }
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* e) {
  if (!session_ || !press_) return;
  if (banding_ && highlight_.rubber_band) {
    const int a = std::min(highlight_.rubber_band->first, highlight_.rubber_band->second);
    const int b = std::max(highlight_.rubber_band->first, highlight_.rubber_band->second);
    highlight_.rubber_band.reset();
    if (b - a >= 3) {
      TimelineWindow w = window_;
      w.t0 = TimelinePainter::timeAt(a, size(), window_);
      w.t1 = TimelinePainter::timeAt(b, size(), window_);
      setWindow(w);
    } else {
      update();
    }
  } else if (!panning_ && e->button() == Qt::LeftButton) {
    if (auto hit = sliceAt(e->pos())) {
      const Slice& s = session_->timeline.slice(*hit);
      if (s.kind == SliceKind::kKernel) {
        emit launchClicked(session_->input.trace.launches[s.record_index].id, s.candidate);
      } else if ((s.kind == SliceKind::kCpuOp || s.kind == SliceKind::kRange) && s.candidate >= 0) {
        emit operatorClicked(s.candidate);
      }
    }
  }
  press_.reset();
  panning_ = banding_ = false;
}

void TimelineWidget::keyPressEvent(QKeyEvent* e) {
  const double mid = (window_.t0 + window_.t1) / 2;
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomAt(0.5, mid); break;
    case Qt::Key_Minus: zoomAt(2.0, mid); break;
    case Qt::Key_Left: panBy(-window_.span() / 8); break;
    case Qt::Key_Right: panBy(window_.span() / 8); break;
    case Qt::Key_Home:
    case Qt::Key_F: fit(); break;
    default: QWidget::keyPressEvent(e);
  }
}

void TimelineWidget::leaveEvent(QEvent*) {
  highlight_.hover.reset();
  update();
}

}  // namespace kfuse::gui
