// The dependency graph of the selected candidate's neighbourhood (its first occurrence and every operation one
// edge away), or of the timeline's visible window, laid out by graphviz (kfuse/gui/graph_layout.h) and drawn
// with a QGraphicsScene (tens of items, not one per launch of the trace).
#pragma once

#include <QGraphicsView>
#include <QLabel>
#include <QPushButton>
#include <QWidget>

#include <memory>

#include "kfuse/gui/graph_layout.h"
#include "kfuse/gui/session.h"

namespace kfuse::gui {

class GraphView : public QWidget {
  Q_OBJECT
 public:
  explicit GraphView(QWidget* parent = nullptr);
  void setSession(std::shared_ptr<const Session> session);
  // The analyzer's graph for the session (built in the background by the main window).
  void setContext(std::shared_ptr<const DependencyContext> context);
  bool hasContext() const { return context_ != nullptr; }
  void showCandidate(int index);
  void showWindow(int64_t t0, int64_t t1);
  const GraphLayout& layout() const { return layout_; }
  QString message() const { return status_->text(); }

 signals:
  void launchClicked(kfuse::core::Id launch);
  void windowRequested();  // "graph of the visible window" pressed

 protected:
  void showEvent(QShowEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;

 private:
  void fit();
  void draw(const std::vector<size_t>& ops, const std::vector<size_t>& members, int candidate, size_t omitted);
  std::shared_ptr<const Session> session_;
  std::shared_ptr<const DependencyContext> context_;
  GraphLayout layout_;
  QGraphicsScene* scene_;
  QGraphicsView* view_;
  QLabel* status_;
  int pending_candidate_ = -1;
};

}  // namespace kfuse::gui
