// The timeline view: TimelinePainter on a widget, with zoom (wheel at the cursor, rubber band with the right button
// or Shift+drag, +/-), pan (drag, arrow keys), vertical scroll (Shift+wheel), hover details and click selection.
#pragma once

#include <QWidget>

#include <memory>
#include <optional>

#include "kfuse/gui/session.h"
#include "kfuse/gui/timeline_painter.h"

namespace kfuse::gui {

class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineWidget(QWidget* parent = nullptr);
  void setSession(std::shared_ptr<const Session> session);

  const TimelineWindow& window() const { return window_; }
  void setWindow(TimelineWindow w);
  void fit();
  void zoomAt(double factor, double center_ns);  // factor < 1 zooms in
  void panBy(double ns);
  // Centres the window on candidate `index`'s first occurrence (a few occurrences' width), keeping the zoom if it
  // is already visible.
  void showCandidate(int index);
  void setHighlight(int candidate, core::Id launch);
  const TimelineHighlight& highlight() const { return highlight_; }
  const TimelinePaintStats& lastPaintStats() const { return stats_; }
  // The launch id under `pos`, or kNoId (for tests).
  std::optional<SliceRef> sliceAt(QPoint pos) const;
  QPoint pointOf(core::Id launch) const;  // centre of a launch's box (may be outside the widget)
  QPoint pointOf(SliceRef ref) const;     // centre of any slice's box
  QString describe(SliceRef ref) const;   // the hover text

 signals:
  void launchClicked(kfuse::core::Id launch, int candidate);
  // A CPU operator that launched a kernel of `candidate`, or one of its module instances, was clicked.
  void operatorClicked(int candidate);
  void windowChanged();

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void leaveEvent(QEvent*) override;

 private:
  void clampScroll();
  std::shared_ptr<const Session> session_;
  TimelinePainter painter_;
  TimelineWindow window_;
  TimelineHighlight highlight_;
  TimelinePaintStats stats_;
  std::optional<QPoint> press_;
  bool panning_ = false, banding_ = false;
  TimelineWindow press_window_;
};

}  // namespace kfuse::gui
