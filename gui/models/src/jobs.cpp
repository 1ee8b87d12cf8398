#include "kfuse/gui/jobs.h"

#include <QCoreApplication>

namespace kfuse::gui {

SessionLoader::SessionLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const Session>>();
}

SessionLoader::~SessionLoader() {
  if (cancel_) cancel_->store(true);
  if (thread_) thread_->wait();
}

void SessionLoader::load(const QString& path, const analyzer::AnalysisOptions& options) {
  if (thread_) {
    cancel();
    thread_->wait();
    QCoreApplication::sendPostedEvents(this);
  }
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  auto cancel = cancel_;
  const std::string p = path.toStdString();
  QThread* t = QThread::create([this, cancel, p, options, path] {
    LoadControl control;
    control.cancel = cancel.get();
    control.progress = [this, cancel](int pct, const std::string& stage) {
      if (cancel->load()) return;
      const QString s = QString::fromStdString(stage);
      QMetaObject::invokeMethod(
          this, [this, pct, s] { emit progress(pct, s); }, Qt::QueuedConnection);
    };
    auto result = loadSession(p, options, control);
    QMetaObject::invokeMethod(
        this,
        [this, cancel, path, result = std::make_shared<decltype(result)>(std::move(result))] {
          // Dropped: a newer load replaced this one, or it was cancelled (cancel() said so already).
          if (cancel != cancel_ || cancel->load()) return;
          if (!result->ok()) {
            emit failed(path, QString::fromStdString(result->status().message()));
          } else {
            emit loaded(result->value());
          }
        },
        Qt::QueuedConnection);
  });
  thread_ = t;
  connect(t, &QThread::finished, this, [this, t] {
    if (thread_ == t) thread_ = nullptr;
    t->deleteLater();
  });
  t->start();
}

void SessionLoader::cancel() {
  if (!cancel_ || cancel_->load()) return;
  cancel_->store(true);
  // The user sees the load end now; the worker's result is dropped when it arrives.
  emit cancelled(QString());
}

void SessionLoader::wait() {
  while (thread_) {
    thread_->wait();
    QCoreApplication::sendPostedEvents(this);
    QCoreApplication::processEvents();
  }
  QCoreApplication::sendPostedEvents(this);
}

}  // namespace kfuse::gui
