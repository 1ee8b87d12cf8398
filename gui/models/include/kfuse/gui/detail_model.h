// The candidate detail: a two-column tree (what / value) of sections — the PyTorch context (operators, module path,
// occurrences per module instance) and remedies where the trace has them, members with their operator, module, kernel
// family, launch shapes and resources, dependency edges with their reasons, legality (the report's verdict
// sentence, proof or blocking reason), cost per GPU, conflicts.
//
// DetailTree is a plain value built by candidateDetail(); DetailModel shows any DetailTree. A field the analyzer
// adds to Candidate is shown by adding one row in candidateDetail().
#pragma once

#include <QAbstractItemModel>
#include <QString>

#include <memory>
#include <vector>

#include "kfuse/gui/session.h"

namespace kfuse::gui {

struct DetailNode {
  QString key, value, tooltip;
  std::vector<DetailNode> children;
  DetailNode& add(QString k, QString v = {}, QString tip = {}) {
    children.push_back({std::move(k), std::move(v), std::move(tip), {}});
    return children.back();
  }
};

// The detail of `candidate` (of `report`, which may be costed for another GPU than the session's) over `session`.
DetailNode candidateDetail(const Session& session, const analyzer::Report& report,
                           const analyzer::Candidate& candidate);
// One launch's facts (a timeline click outside any candidate).
DetailNode launchDetail(const Session& session, core::Id launch_id);

class DetailModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  explicit DetailModel(QObject* parent = nullptr);
  void setTree(DetailNode root);
  const DetailNode& tree() const { return root_; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  // Nodes are addressed through a flat table of (node, parent slot, row) built on setTree, so that parent() is O(1).
  struct Slot {
    const DetailNode* node;
    int parent;  // slot index, -1 for top-level
    int row;
  };
  const Slot* slotOf(const QModelIndex& index) const;
  void indexSlots(const DetailNode& node, int parent_slot);

  DetailNode root_;
  std::vector<Slot> slots_;
  std::vector<std::vector<int>> child_slots_;  // per slot; the root's children in root_slots_
  std::vector<int> root_slots_;
};

}  // namespace kfuse::gui
