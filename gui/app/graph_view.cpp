#include "graph_view.h"

#include <QGraphicsRectItem>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsSimpleTextItem>
#include <QHBoxLayout>
#include <QVBoxLayout>

#include <cmath>

#include "kfuse/gui/timeline_painter.h"

namespace kfuse::gui {

namespace {

QColor edgeColor(analyzer::EdgeKind k) {
  switch (k) {
    case analyzer::EdgeKind::kRaw: return QColor(0xc0, 0x30, 0x30);
    case analyzer::EdgeKind::kWar: return QColor(0xd0, 0x80, 0x20);
    case analyzer::EdgeKind::kWaw: return QColor(0x90, 0x40, 0xa0);
    case analyzer::EdgeKind::kEventSync:
    case analyzer::EdgeKind::kHostSync: return QColor(0x20, 0x70, 0xb0);
    case analyzer::EdgeKind::kStreamOrder: return QColor(0x90, 0x90, 0x90);
  }
  return Qt::black;
}

class NodeItem : public QGraphicsRectItem {
 public:
  NodeItem(const QRectF& r, GraphView* view, core::Id launch) : QGraphicsRectItem(r), view_(view), launch_(launch) {
    setCursor(launch ? Qt::PointingHandCursor : Qt::ArrowCursor);
  }
  void mousePressEvent(QGraphicsSceneMouseEvent* e) override {
    if (launch_) emit view_->launchClicked(launch_);
    e->accept();
  }

 private:
  GraphView* view_;
  core::Id launch_;
};

}  // namespace

GraphView::GraphView(QWidget* parent) : QWidget(parent) {
  scene_ = new QGraphicsScene(this);
  view_ = new QGraphicsView(scene_, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setDragMode(QGraphicsView::ScrollHandDrag);
  status_ = new QLabel(tr("Select a candidate to see its dependency neighbourhood."), this);
  status_->setWordWrap(true);
  auto* window = new QPushButton(tr("Graph of the visible timeline window"), this);
  connect(window, &QPushButton::clicked, this, &GraphView::windowRequested);
  auto* top = new QHBoxLayout;
  top->addWidget(status_, 1);
  top->addWidget(window);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(view_, 1);
}

void GraphView::setSession(std::shared_ptr<const Session> session) {
  session_ = std::move(session);
  context_.reset();
  layout_ = {};
  scene_->clear();
  status_->setText(tr("Select a candidate to see its dependency neighbourhood."));
}

void GraphView::setContext(std::shared_ptr<const DependencyContext> context) {
  context_ = std::move(context);
  if (pending_candidate_ >= 0) showCandidate(pending_candidate_);
}

void GraphView::showCandidate(int index) {
  if (!session_) return;
  const analyzer::Candidate* c = session_->candidate(index);
  if (!c || c->occurrences.empty()) return;
  if (!context_) {
    pending_candidate_ = index;
    status_->setText(tr("Building the dependency graph…"));
    return;
  }
  pending_candidate_ = -1;
  size_t omitted = 0;
  const std::vector<size_t>& members = c->occurrences.front();
  const auto ops = neighbourhood(context_->graph, members, 1, 24, &omitted);
  draw(ops, members, index, omitted);
}

void GraphView::showWindow(int64_t t0, int64_t t1) {
  if (!session_ || !context_) return;
  pending_candidate_ = -1;
  const auto ops = opsInWindow(context_->graph, t0, t1, 40);
  draw(ops, {}, -1, 0);
}

void GraphView::draw(const std::vector<size_t>& ops, const std::vector<size_t>& members, int candidate,
                     size_t omitted) {
  scene_->clear();
  // The members by their operators where the trace links them (as the table names them).
  std::vector<std::string> labels;
  if (const analyzer::Candidate* c = session_->candidate(candidate)) {
    for (const analyzer::MemberContext& m : c->members) labels.push_back(m.op.empty() ? std::string() : m.label);
  }
  auto laid =
      layoutGraph(context_->graph, session_->input.trace, context_->catalog, ops, members, /*max_label=*/48, labels);
  if (!laid.ok()) {
    layout_ = {};
    status_->setText(QString::fromStdString(laid.status().message()));
    return;
  }
  layout_ = std::move(laid).value();
  const analyzer::Candidate* c = session_->candidate(candidate);
  status_->setText(c ? tr("Candidate #%1: %2 operations, %3 edges (one edge around its first occurrence%4)")
                           .arg(c->rank)
                           .arg(layout_.nodes.size())
                           .arg(layout_.edges.size())
                           .arg(omitted ? tr("; %1 more neighbours left out").arg(omitted) : QString())
                     : tr("%1 operations, %2 edges in the window").arg(layout_.nodes.size()).arg(layout_.edges.size()));
  QFont node_font = font();
  node_font.setPointSizeF(8);
  QFont edge_font = font();
  edge_font.setPointSizeF(6.5);
  for (const GraphEdge& e : layout_.edges) {
    if (e.spline.empty()) continue;
    QPainterPath path(QPointF(e.spline[0].x, e.spline[0].y));
    for (size_t k = 1; k + 2 < e.spline.size(); k += 3) {
      path.cubicTo(QPointF(e.spline[k].x, e.spline[k].y), QPointF(e.spline[k + 1].x, e.spline[k + 1].y),
                   QPointF(e.spline[k + 2].x, e.spline[k + 2].y));
    }
    QPen pen(edgeColor(e.kind), 1.2);
    if (e.inferred) pen.setStyle(Qt::DashLine);
    auto* item = scene_->addPath(path, pen);
    item->setToolTip(QString::fromStdString(e.reason));
    if (e.has_arrow) {
      const QPointF tip(e.arrow_tip.x, e.arrow_tip.y);
      const QPointF from(e.spline.back().x, e.spline.back().y);
      scene_->addLine(QLineF(from, tip), pen);
      const double angle = std::atan2(tip.y() - from.y(), tip.x() - from.x());
      QPolygonF head;
      head << tip << tip - QPointF(std::cos(angle - 0.4) * 8, std::sin(angle - 0.4) * 8)
           << tip - QPointF(std::cos(angle + 0.4) * 8, std::sin(angle + 0.4) * 8);
      scene_->addPolygon(head, pen, QBrush(pen.color()));
    }
    auto* label = scene_->addSimpleText(QString::fromStdString(e.label), edge_font);
    label->setBrush(edgeColor(e.kind).darker(130));
    const QRectF br = label->boundingRect();
    label->setPos(e.label_pos.x - br.width() / 2, e.label_pos.y - br.height() / 2);
    label->setToolTip(QString::fromStdString(e.reason));
  }
  for (const GraphNode& n : layout_.nodes) {
    const QRectF r(n.center.x - n.width / 2, n.center.y - n.height / 2, n.width, n.height);
    auto* box = new NodeItem(r, this, n.launch_id);
    QColor fill = n.kind == analyzer::OpKind::kKernel ? QColor(0xe4, 0xea, 0xf2) : QColor(0xf6, 0xe6, 0xc8);
    if (n.member) fill = TimelinePainter::candidateColor(candidate);
    box->setBrush(fill);
    box->setPen(QPen(n.member ? Qt::black : QColor(0x70, 0x70, 0x70), n.member ? 2 : 1));
    scene_->addItem(box);
    auto* text = scene_->addSimpleText(QString::fromStdString(n.text.empty() ? n.label : n.text), node_font);
    const QRectF br = text->boundingRect();
    text->setPos(n.center.x - br.width() / 2, n.center.y - br.height() / 2);
    text->setAcceptedMouseButtons(Qt::NoButton);
  }
  scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-10, -10, 10, 10));
  fit();
}

// The whole graph in view, magnified at most 1.2 times (the view's size is only known once it is shown).
void GraphView::fit() {
  if (scene_->items().isEmpty()) return;
  view_->fitInView(scene_->sceneRect(), Qt::KeepAspectRatio);
  if (view_->transform().m11() > 1.2) view_->setTransform(QTransform::fromScale(1.2, 1.2));
}

void GraphView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  fit();
}

void GraphView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  fit();
}

}  // namespace kfuse::gui
