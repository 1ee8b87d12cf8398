// The roofline (Qt Charts, log-log): every kernel of the report as a point (arithmetic intensity in FLOP per DRAM
// byte vs achieved FLOP/s) under the roofs of the report's GPU (DRAM bandwidth slope; FP64, FP32, FP16 peaks), and
// for the selected candidate its members joined by arrows to the fused kernel's predicted point. The points are
// kfuse::gui::rooflineChart()'s: counted bytes and FLOPs are drawn filled, the analyzer's estimates (from operator
// shapes, the PTX, ...) hollow, and the legend says what the estimates rest on.
#pragma once

#include <QChartView>
#include <QLabel>
#include <QWidget>

#include <memory>

#include "kfuse/gui/session.h"

namespace kfuse::gui {

class RooflineView : public QWidget {
  Q_OBJECT
 public:
  explicit RooflineView(QWidget* parent = nullptr);
  void setSession(std::shared_ptr<const Session> session);
  void setReport(const analyzer::Report& report);  // another GPU's roofs and predictions
  void showCandidate(int index);
  QChart* chart() const { return view_->chart(); }
  QString message() const { return note_->text(); }
  int memberPoints() const { return member_points_; }
  int estimatedPoints() const { return estimated_points_; }
  bool hasPredictedPoint() const { return has_predicted_; }

 private:
  void rebuild();
  void drawArrows();
  std::shared_ptr<const Session> session_;
  analyzer::Report report_;
  int candidate_ = -1;
  QChartView* view_;
  QLabel* note_;
  int member_points_ = 0;
  int estimated_points_ = 0;
  bool has_predicted_ = false;
  std::vector<std::pair<QPointF, QPointF>> arrows_;  // data coordinates: member -> predicted
  std::vector<QGraphicsItem*> arrow_items_;
};

}  // namespace kfuse::gui
