// Paints the timeline into any QPainter (a widget, or an image in tests and benchmarks): a time ruler, lane titles,
// and for each lane only the slices inside the visible window (culling by binary search). Level of detail: slices
// narrower than a pixel are merged into one column per pixel, so a frame costs O(lanes x width x log n) whatever
// the trace's size; there is no graphics item per launch. Links Qt Gui only.
#pragma once

#include <QColor>
#include <QPainter>
#include <QPoint>
#include <QSize>

#include <optional>

#include "kfuse/gui/timeline_data.h"

namespace kfuse::gui {

struct TimelineWindow {
  double t0 = 0, t1 = 1;  // visible time window, ns on the trace's clock
  int scroll_y = 0;       // pixels the lanes are scrolled up
  double span() const { return t1 - t0; }
};

struct TimelineHighlight {
  int candidate = -1;                              // its occurrences are drawn strong, other kernels faded
  core::Id launch = core::kNoId;                   // outlined
  std::optional<SliceRef> hover;                   // outlined lightly
  std::optional<std::pair<int, int>> rubber_band;  // x range being dragged
};

struct TimelinePaintStats {
  size_t boxes = 0;    // slices drawn as boxes of their own
  size_t columns = 0;  // one-pixel columns standing for several slices
};

class TimelinePainter {
 public:
  static constexpr int kTitleWidth = 180, kRulerHeight = 24, kLaneHeight = 20, kRangeLaneHeight = 16, kGap = 2;

  // The colour of candidate `index`'s kernels (the same in the table and the roofline).
  static QColor candidateColor(int index);

  TimelinePaintStats paint(QPainter& p, QSize size, const TimelineData& data, const TimelineWindow& window,
                           const TimelineHighlight& highlight) const;
  std::optional<SliceRef> hitTest(QPoint pos, QSize size, const TimelineData& data, const TimelineWindow& w) const;

  static int laneTop(const TimelineData& data, size_t lane);  // content y, before scrolling
  static int laneHeight(const Lane& lane) { return lane.kind == LaneKind::kRanges ? kRangeLaneHeight : kLaneHeight; }
  static int contentHeight(const TimelineData& data);
  static double timeAt(int x, QSize size, const TimelineWindow& w);
  static double xAt(double t, QSize size, const TimelineWindow& w);
};

}  // namespace kfuse::gui
