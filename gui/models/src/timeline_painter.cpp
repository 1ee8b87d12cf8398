#include "kfuse/gui/timeline_painter.h"

#include <QFontMetrics>

#include <algorithm>
#include <cmath>

namespace kfuse::gui {

QColor TimelinePainter::candidateColor(int index) {
  if (index < 0) return QColor(0x8c, 0x9d, 0xb5);
  const double hue = std::fmod(0.08 + 0.618033988749895 * index, 1.0);
  return QColor::fromHsvF(static_cast<float>(hue), 0.65f, 0.92f);
}

int TimelinePainter::laneTop(const TimelineData& data, size_t lane) {
  int y = kRulerHeight;
  for (size_t i = 0; i < lane && i < data.lanes.size(); ++i) y += laneHeight(data.lanes[i]) + kGap;
  return y;
}

int TimelinePainter::contentHeight(const TimelineData& data) {
  return laneTop(data, data.lanes.size());
}

double TimelinePainter::timeAt(int x, QSize size, const TimelineWindow& w) {
  const int width = std::max(1, size.width() - kTitleWidth);
  return w.t0 + (x - kTitleWidth) * w.span() / width;
}

double TimelinePainter::xAt(double t, QSize size, const TimelineWindow& w) {
  const int width = std::max(1, size.width() - kTitleWidth);
  return kTitleWidth + (t - w.t0) * width / w.span();
}

namespace {

QColor sliceColor(const Slice& s, const TimelineHighlight& h) {
  QColor c;
  switch (s.kind) {
    case SliceKind::kKernel: c = TimelinePainter::candidateColor(s.candidate); break;
    case SliceKind::kMemcpy: c = QColor(0xe0, 0xa0, 0x30); break;
    case SliceKind::kMemset: c = QColor(0xb0, 0x80, 0xd0); break;
    case SliceKind::kRange: c = QColor::fromHsv(static_cast<int>((s.label * 47) % 360), 60, 235); break;
    case SliceKind::kCpuOp: c = QColor::fromHsv(static_cast<int>((s.label * 47) % 360), 35, 225); break;
  }
  if (h.candidate >= 0 && s.kind == SliceKind::kKernel && s.candidate != h.candidate) c = c.lighter(150);
  // The operators that launched the selected candidate's kernels and its module instances, in its colour.
  if (h.candidate >= 0 && (s.kind == SliceKind::kCpuOp || s.kind == SliceKind::kRange) && s.candidate == h.candidate) {
    c = TimelinePainter::candidateColor(s.candidate);
  }
  return c;
}

// A round step of 1, 2 or 5 x 10^k ns near `ns`.
double niceStep(double ns) {
  const double p = std::pow(10.0, std::floor(std::log10(std::max(ns, 1e-3))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= ns) return m * p;
  }
  return 10 * p;
}

QString timeLabel(double ns, double step) {
  if (step >= 1e6) return QString::number(ns / 1e6, 'f', step >= 1e7 ? 0 : 1) + " ms";
  if (step >= 1e3) return QString::number(ns / 1e3, 'f', step >= 1e4 ? 0 : 1) + " µs";
  return QString::number(ns, 'f', 0) + " ns";
}

}  // namespace

TimelinePaintStats TimelinePainter::paint(QPainter& p, QSize size, const TimelineData& data, const TimelineWindow& w,
                                          const TimelineHighlight& h) const {
  TimelinePaintStats stats;
  p.fillRect(QRect(QPoint(0, 0), size), QColor(0xfb, 0xfb, 0xfb));
  const int width = size.width();
  const int height = size.height();
  const double ns_per_px = w.span() / std::max(1, width - kTitleWidth);
  const QFontMetrics fm = p.fontMetrics();

  // Lanes.
  p.save();
  p.setClipRect(QRect(kTitleWidth, kRulerHeight, width - kTitleWidth, height - kRulerHeight));
  int y = kRulerHeight - w.scroll_y;
  for (size_t li = 0; li < data.lanes.size(); ++li) {
    const Lane& lane = data.lanes[li];
    const int lh = laneHeight(lane);
    if (y + lh < kRulerHeight) {
      y += lh + kGap;
      continue;
    }
    if (y > height) break;
    if (li % 2 == 0) p.fillRect(QRect(kTitleWidth, y - 1, width - kTitleWidth, lh + kGap), QColor(0xf0, 0xf2, 0xf5));
    const auto t0 = static_cast<int64_t>(std::floor(w.t0));
    const auto t1 = static_cast<int64_t>(std::ceil(w.t1));
    size_t i = lane.firstVisible(t0);
    const size_t end = lane.endVisible(t1);
    while (i < end) {
      const Slice& s = lane.slices[i];
      const double x0 = xAt(static_cast<double>(s.start), size, w);
      const double x1 = xAt(static_cast<double>(s.end), size, w);
      if (x1 - x0 >= 1.0) {
        const QRectF r(std::max(x0, kTitleWidth - 1.0), y, std::min(x1, width + 1.0) - std::max(x0, kTitleWidth - 1.0),
                       lh);
        const QColor c = sliceColor(s, h);
        p.fillRect(r, c);
        if (r.width() > 3) {
          p.setPen(c.darker(140));
          p.drawRect(r.adjusted(0, 0, -1, -1));
        }
        if (r.width() > 40) {
          p.setPen(Qt::black);
          const QString text = fm.elidedText(QString::fromStdString(data.labels[s.label]), Qt::ElideRight,
                                             static_cast<int>(r.width()) - 6);
          p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
        }
        ++stats.boxes;
        ++i;
        continue;
      }
      // Level of detail: everything starting within this pixel becomes one column; a long slice among them
      // extends the column to its end (max_end), so nothing visible is skipped.
      const int px = static_cast<int>(std::floor(x0));
      const auto next_t = static_cast<int64_t>(std::ceil(w.t0 + (px + 1 - kTitleWidth) * ns_per_px));
      size_t j = std::max(i + 1, lane.firstStartingAt(next_t));
      j = std::min(j, end);
      const double col_end = std::max<double>(px + 1, xAt(static_cast<double>(lane.max_end[j - 1]), size, w));
      bool has_highlight = false;
      if (h.candidate >= 0 && j - i <= 64) {
        for (size_t k = i; k < j; ++k) has_highlight |= lane.slices[k].candidate == h.candidate;
      }
      Slice rep = s;
      if (has_highlight) rep.candidate = h.candidate;
      QColor c = sliceColor(rep, h);
      if (j - i > 1 && !has_highlight) c = c.darker(115);
      p.fillRect(QRectF(px, y, std::min(col_end, width + 1.0) - px, lh), c);
      ++stats.columns;
      i = j;
    }
    y += lh + kGap;
  }
  // Selection and hover outlines.
  auto outline = [&](SliceRef r, QColor c, int pen) {
    if (r.lane >= data.lanes.size()) return;
    const Slice& s = data.slice(r);
    const double x0 = xAt(static_cast<double>(s.start), size, w);
    const double x1 = std::max(x0 + 3, xAt(static_cast<double>(s.end), size, w));
    const int ly = laneTop(data, r.lane) - w.scroll_y;
    p.setPen(QPen(c, pen));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(x0 - 1, ly - 1, x1 - x0 + 2, laneHeight(data.lanes[r.lane]) + 2));
  };
  if (h.launch != core::kNoId) {
    if (auto it = data.by_launch.find(h.launch); it != data.by_launch.end()) outline(it->second, Qt::black, 2);
  }
  if (h.hover) outline(*h.hover, QColor(0x20, 0x20, 0x20, 150), 1);
  if (h.rubber_band) {
    const int a = std::min(h.rubber_band->first, h.rubber_band->second);
    const int b = std::max(h.rubber_band->first, h.rubber_band->second);
    p.fillRect(QRect(a, kRulerHeight, b - a, height - kRulerHeight), QColor(0x30, 0x70, 0xd0, 60));
  }
  p.restore();

  // Lane titles.
  p.fillRect(QRect(0, kRulerHeight, kTitleWidth, height - kRulerHeight), QColor(0xe8, 0xea, 0xee));
  y = kRulerHeight - w.scroll_y;
  p.save();
  p.setClipRect(QRect(0, kRulerHeight, kTitleWidth, height - kRulerHeight));
  p.setPen(Qt::black);
  for (const Lane& lane : data.lanes) {
    const int lh = laneHeight(lane);
    if (y > height) break;
    if (y + lh >= kRulerHeight && !lane.title.empty()) {
      p.drawText(QRect(6, y, kTitleWidth - 10, lh), Qt::AlignVCenter | Qt::AlignLeft,
                 fm.elidedText(QString::fromStdString(lane.title), Qt::ElideRight, kTitleWidth - 10));
    }
    y += lh + kGap;
  }
  p.restore();

  // Ruler: times from the trace's start.
  p.fillRect(QRect(0, 0, width, kRulerHeight), QColor(0xdd, 0xe1, 0xe8));
  p.setPen(QColor(0x40, 0x40, 0x40));
  const double step = niceStep(ns_per_px * 100);
  const double first = std::ceil((w.t0 - static_cast<double>(data.start_ns)) / step) * step;
  for (double t = first; t + static_cast<double>(data.start_ns) <= w.t1; t += step) {
    const double x = xAt(t + static_cast<double>(data.start_ns), size, w);
    p.drawLine(QPointF(x, kRulerHeight - 6), QPointF(x, kRulerHeight));
    p.drawText(QPointF(x + 3, kRulerHeight - 8), timeLabel(t, step));
  }
  p.drawText(QRect(6, 0, kTitleWidth - 10, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft,
             data.placed_at_api_time ? QStringLiteral("at launch-call times") : QStringLiteral("GPU time"));
  return stats;
}

std::optional<SliceRef> TimelinePainter::hitTest(QPoint pos, QSize size, const TimelineData& data,
                                                 const TimelineWindow& w) const {
  if (pos.x() < kTitleWidth || pos.y() < kRulerHeight) return std::nullopt;
  const int cy = pos.y() + w.scroll_y;
  for (size_t li = 0; li < data.lanes.size(); ++li) {
    const int top = laneTop(data, li);
    const Lane& lane = data.lanes[li];
    if (cy < top || cy >= top + laneHeight(lane)) continue;
    // Slices within 2 px of the point; the one whose middle is closest.
    const double ns_per_px = w.span() / std::max(1, size.width() - kTitleWidth);
    const double t = timeAt(pos.x(), size, w);
    const auto a = static_cast<int64_t>(std::floor(t - 2 * ns_per_px));
    const auto b = static_cast<int64_t>(std::ceil(t + 2 * ns_per_px));
    std::optional<SliceRef> best;
    double best_d = 0;
    const size_t end = lane.endVisible(b + 1);
    for (size_t i = lane.firstVisible(a); i < end; ++i) {
      const Slice& s = lane.slices[i];
      if (s.end < a || s.start > b) continue;
      const double d = s.start <= t && t <= s.end ? 0 : std::min(std::abs(s.start - t), std::abs(s.end - t));
      if (!best || d < best_d) {
        best = SliceRef{static_cast<uint32_t>(li), static_cast<uint32_t>(i)};
        best_d = d;
      }
      if (end - i > 4096 && best && best_d == 0) break;
    }
    return best;
  }
  return std::nullopt;
}

}  // namespace kfuse::gui
