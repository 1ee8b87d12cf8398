// Background work for the GUI: loading a trace, re-costing for another GPU, any Expected-returning job. Each runs
// on its own QThread; results come back on the receiver's thread as plain values through signals (STYLE.md: work
// off the UI thread, progress, cancel). Cancelling drops the result: a job that is already inside the importer or
// the analysis finishes that stage on its thread and is then discarded.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>

#include "kfuse/gui/session.h"

namespace kfuse::gui {

class SessionLoader : public QObject {
  Q_OBJECT
 public:
  explicit SessionLoader(QObject* parent = nullptr);
  ~SessionLoader() override;  // waits for a running load (its result is dropped)

  void load(const QString& path, const analyzer::AnalysisOptions& options = {});
  void cancel();
  bool busy() const { return thread_ != nullptr; }
  // Blocks until the running load (if any) has finished and its signal was delivered.
  void wait();

 signals:
  void progress(int percent, const QString& stage);
  void loaded(std::shared_ptr<const kfuse::gui::Session> session);
  void failed(const QString& path, const QString& message);
  void cancelled(const QString& path);

 private:
  QThread* thread_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

// Runs fn() on a worker thread and calls done(result) on `context`'s thread; nothing is called when `context` is
// destroyed first.
template <typename T>
void runInBackground(QObject* context, std::function<T()> fn, std::function<void(T)> done) {
  QThread* t = QThread::create([context_ptr = QPointer<QObject>(context), fn = std::move(fn), done = std::move(done)] {
    auto result = std::make_shared<T>(fn());
    if (!context_ptr) return;
    QMetaObject::invokeMethod(
        context_ptr.data(), [done, result] { done(std::move(*result)); }, Qt::QueuedConnection);
  });
  QObject::connect(t, &QThread::finished, t, &QObject::deleteLater);
  t->start();
}

}  // namespace kfuse::gui

Q_DECLARE_METATYPE(std::shared_ptr<const kfuse::gui::Session>)
