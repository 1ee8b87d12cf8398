// kfuse-gui's main window: candidates table and filters on the left; timeline, dependency graph, roofline and PTX
// views in tabs; the candidate detail with a GPU selector and the review box (accept / reject the selected candidates
// with a note, export the accepted plans) below. One Selection links them all. Opening runs in the background with
// progress and cancel; a failed import shows the importer's message in the window.
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTreeView>

#include <atomic>
#include <memory>

#include "candidate_panel.h"
#include "compare_view.h"
#include "graph_view.h"
#include "kfuse/gui/candidates_model.h"
#include "kfuse/gui/detail_model.h"
#include "kfuse/gui/jobs.h"
#include "kfuse/gui/review_book.h"
#include "kfuse/gui/selection.h"
#include "ptx_view.h"
#include "roofline_view.h"
#include "timeline_widget.h"

namespace kfuse::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  void openFile(const QString& path);
  // Blocks until a running open has finished and the window shows its result (tests, screenshots).
  void waitForLoad();
  // Blocks until the background builds the views wait for (the dependency graph) are done.
  void waitForBackground();

  std::shared_ptr<const Session> session() const { return session_; }
  Selection* selection() const { return selection_; }
  CandidatePanel* candidates() const { return panel_; }
  CandidatesModel* candidatesModel() const { return model_; }
  DetailModel* detailModel() const { return detail_; }
  TimelineWidget* timeline() const { return timeline_; }
  GraphView* graph() const { return graph_; }
  RooflineView* roofline() const { return roofline_; }
  PtxView* ptx() const { return ptx_; }
  ReviewBook* reviews() const { return reviews_; }
  QTabWidget* tabs() const { return tabs_; }
  QComboBox* gpuSelector() const { return gpu_; }
  QString bannerText() const { return banner_->isVisible() ? banner_->text() : QString(); }
  QLineEdit* noteEdit() const { return note_; }
  QPushButton* acceptButton() const { return accept_; }
  QPushButton* rejectButton() const { return reject_; }
  QStringList recentFiles() const;

  // Review the candidates selected in the table (else the shared selection's one) with the note (the buttons call
  // this): all of them or none; accepting one that shares a launch with an accepted candidate, or two that share
  // one, is refused. The error message (also shown in the banner by the buttons) or empty.
  QString decide(core::ReviewVerdict verdict);
  // Rewrites every accepted candidate into DIR/candidate-RANK (as `kfuse rewrite --candidate RANK`, validated on the
  // emulator), in the background with progress; Cancel stops after the plan being written. Refused, with the reason
  // as the only line, when the accepted set is not consistent or DIR holds a candidate-RANK of a candidate that is
  // not accepted. `done` gets one line per candidate.
  void exportPlans(const QString& dir, std::function<void(QStringList)> done = {});
  QPushButton* cancelButton() const { return cancel_; }
  // Opens a before/after window comparing the two traces (File → Compare with…: the open trace is the one before).
  // The window belongs to this one.
  CompareWindow* compare(const QString& before, const QString& after);

 protected:
  void dragEnterEvent(QDragEnterEvent*) override;
  void dropEvent(QDropEvent*) override;
  void closeEvent(QCloseEvent*) override;

 private:
  void buildMenus();
  void showBanner(const QString& text, bool error);
  void sessionLoaded(std::shared_ptr<const Session> session);
  void loadFailed(const QString& path, const QString& message);
  void candidateSelected(int index);
  void launchSelected(core::Id id);
  void refreshDetail();
  void refreshReviewBox();
  void gpuChanged(int index);
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void saveAsKfuse();
  void exportPlansDialog();
  void compareDialog();

  SessionLoader* loader_;
  std::shared_ptr<const Session> session_;
  std::unique_ptr<analyzer::Report> gpu_report_;  // the report costed for the GPU selector's choice
  Selection* selection_;
  CandidatesModel* model_;
  CandidatePanel* panel_;
  DetailModel* detail_;
  QTreeView* detail_view_;
  TimelineWidget* timeline_;
  GraphView* graph_;
  RooflineView* roofline_;
  PtxView* ptx_;
  ReviewBook* reviews_;
  QTabWidget* tabs_;
  QComboBox* gpu_;
  QLabel* banner_;
  QLabel* decision_;
  QLineEdit* note_;
  QPushButton *accept_, *reject_, *export_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QMenu* recent_menu_ = nullptr;
  std::shared_ptr<std::atomic<bool>> export_cancel_;  // set while plans are being exported
  int background_jobs_ = 0;
  int gpu_generation_ = 0;
};

}  // namespace kfuse::gui
