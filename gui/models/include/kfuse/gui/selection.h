// What is selected, shared by every view: a candidate (index into report.candidates, -1 none) and a launch (id,
// kNoId none). Views set it and follow it; setting the same value again emits nothing.
#pragma once

#include <QObject>

#include "kfuse/core/trace.h"

namespace kfuse::gui {

class Selection : public QObject {
  Q_OBJECT
 public:
  explicit Selection(QObject* parent = nullptr) : QObject(parent) {}
  int candidate() const { return candidate_; }
  core::Id launch() const { return launch_; }

  void setCandidate(int index) {
    if (index == candidate_) return;
    candidate_ = index;
    emit candidateChanged(index);
  }
  void setLaunch(core::Id id) {
    if (id == launch_) return;
    launch_ = id;
    emit launchChanged(id);
  }
  void clear() {
    setLaunch(core::kNoId);
    setCandidate(-1);
  }

 signals:
  void candidateChanged(int index);
  void launchChanged(kfuse::core::Id id);

 private:
  int candidate_ = -1;
  core::Id launch_ = core::kNoId;
};

}  // namespace kfuse::gui
