#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "event_queue.h"
#include "kfuse/collector/trace_sink.h"
#include "kfuse/core/trace_store.h"
#include "recording_status.h"
#include "trace_assembler.h"

namespace kfuse::collector {

struct SqliteSink::Impl {
  std::string path;
  SqliteSinkOptions options;
  std::unique_ptr<core::TraceWriter> writer;
  std::unique_ptr<WriterOutput> output;
  std::unique_ptr<TraceAssembler> assembler;
  EventQueue queue;
  std::thread thread;

  std::atomic<uint64_t> events{0}, dropped{0}, dropped_images{0}, written{0};
  std::atomic<uint64_t> image_bytes_pending{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};

  mutable std::mutex status_mu;
  Status status;
  bool finished = false;
  std::mutex finish_mu;

  // flush() handshake with the writer thread.
  std::mutex flush_mu;
  std::condition_variable flush_cv;
  uint64_t flush_requested = 0, flush_done = 0;

  Impl(std::string p, SqliteSinkOptions o) : path(std::move(p)), options(std::move(o)), queue(options.queue_bytes) {}

  void fail(const Status& s) {
    {
      std::lock_guard lock(status_mu);
      if (!status.ok()) return;
      status = s;
    }
    failed = true;
    queue.close();
    std::fprintf(stderr,
                 "kfuse: collector: writing %s failed: %s; recording stopped, the application goes on and the trace "
                 "keeps everything committed before\n",
                 path.c_str(), s.message().c_str());
    reportRecordingFailure(path + ": writing the trace failed: " + s.message() +
                           "; recording stopped there (the trace keeps what was committed before)");
  }

  void consumeOne(EventKind kind, const uint8_t* payload, size_t size) {
    if (failed) {
      if (kind == EventKind::kModule && size >= sizeof(ModuleEvent)) {  // still owns its image
        ModuleEvent e;
        std::memcpy(&e, payload, sizeof e);
        image_bytes_pending -= e.image_size;
        delete[] e.image;
      }
      return;
    }
    uint64_t image_size = 0;
    if (kind == EventKind::kModule && size >= sizeof(ModuleEvent)) {
      ModuleEvent e;
      std::memcpy(&e, payload, sizeof e);
      image_size = e.image_size;
    }
    Status s = assembler->consume(kind, payload, size);
    image_bytes_pending -= image_size;
    ++written;
    if (!s.ok()) fail(s);
  }

  void run() {
    const ScopedNoSigxfsz no_sigxfsz;  // a file size limit fails the trace's writes, not the application
    auto last_commit = std::chrono::steady_clock::now();
    const auto interval = std::chrono::milliseconds(options.flush_interval_ms);
    for (;;) {
      const bool stopping = stop.load();
      uint64_t flush_target = 0;
      {
        std::lock_guard lock(flush_mu);
        flush_target = flush_requested;
      }
      queue.drain([this](EventKind k, const uint8_t* p, size_t n) { consumeOne(k, p, n); },
                  stopping ? 0 : options.flush_interval_ms);
      const auto now = std::chrono::steady_clock::now();
      if (!failed && (now - last_commit >= interval || flush_target || stopping)) {
        if (Status s = writer->flush(); !s.ok()) fail(s);
        last_commit = now;
      }
      if (flush_target) {
        {
          std::lock_guard lock(flush_mu);
          flush_done = flush_target;
        }
        flush_cv.notify_all();
      }
      if (stopping) {
        // Anything pushed between the last drain and close() is drained once more.
        queue.drain([this](EventKind k, const uint8_t* p, size_t n) { consumeOne(k, p, n); }, 0);
        break;
      }
    }
  }

  SinkStats snapshot() const {
    SinkStats s;
    s.events = events;
    s.dropped = dropped;
    s.dropped_images = dropped_images;
    s.waits = queue.waits();
    s.max_queued_bytes = queue.maxUsed();
    s.written = written;
    return s;
  }
};

SqliteSink::SqliteSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SqliteSink::~SqliteSink() {
  if (impl_) (void)finish();
}

Expected<std::unique_ptr<SqliteSink>> SqliteSink::open(const std::string& path, SqliteSinkOptions options) {
  // Module hashing initialises libcrypto, which registers an atexit cleanup. Done lazily on the writer thread,
  // that cleanup would be registered after (so run before) the collector's own exit handler, which then hashes
  // into a torn-down libcrypto. Initialise it here, before any exit handler of ours exists.
  static const uint8_t kNothing = 0;
  (void)core::sha256Hex(&kNothing, 0);
  const ScopedNoSigxfsz no_sigxfsz;
  auto impl = std::make_unique<Impl>(path, std::move(options));
  auto writer = core::TraceWriter::create(
      path, core::TraceWriterOptions{.batch_rows = impl->options.batch_rows, .overwrite = impl->options.overwrite});
  if (!writer) return writer.status();
  impl->writer = std::move(*writer);
  core::TraceMetadata meta = impl->options.metadata;
  if (meta.producer.empty()) meta.producer = "kfuse-collector";
  KFUSE_RETURN_IF_ERROR(impl->writer->setMetadata(meta));
  KFUSE_RETURN_IF_ERROR(impl->writer->flush());
  impl->output = std::make_unique<WriterOutput>(*impl->writer);
  AssemblerOptions ao;
  ao.pid = impl->options.pid ? impl->options.pid : static_cast<int64_t>(getpid());
  ao.process_name = impl->options.process_name;
  impl->assembler = std::make_unique<TraceAssembler>(*impl->output, ao);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<SqliteSink>(new SqliteSink(std::move(impl)));
}

bool SqliteSink::push(EventKind kind, size_t size, FillFn fill, const void* ctx) {
  Impl& im = *impl_;
  if (im.queue.push(kind, size, fill, ctx, im.options.block_timeout_ms)) {
    im.events.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  im.dropped.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool SqliteSink::pushModule(const ModuleEvent& ev) {
  Impl& im = *impl_;
  ModuleEvent e = ev;
  if (e.image) {
    // Bounded image memory: wait for the writer, then leave the image out (the module itself is recorded).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(im.options.block_timeout_ms);
    while (im.image_bytes_pending.load() + e.image_size > im.options.image_budget_bytes &&
           im.image_bytes_pending.load() > 0 && std::chrono::steady_clock::now() < deadline && !im.failed) {
      im.queue.wake();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (im.image_bytes_pending.load() + e.image_size > im.options.image_budget_bytes) {
      im.dropped_images.fetch_add(1, std::memory_order_relaxed);
      delete[] e.image;
      e.image = nullptr;
      e.image_size = 0;
    }
    im.image_bytes_pending += e.image_size;
  }
  if (pushStruct(EventKind::kModule, e)) return true;
  im.image_bytes_pending -= e.image_size;
  delete[] e.image;
  return false;
}

Status SqliteSink::flush(int timeout_ms) {
  Impl& im = *impl_;
  uint64_t target;
  {
    std::lock_guard lock(im.flush_mu);
    target = ++im.flush_requested;
  }
  im.queue.wake();
  std::unique_lock lock(im.flush_mu);
  if (!im.flush_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return im.flush_done >= target; })) {
    return ioError(im.path + ": the trace writer did not catch up within " + std::to_string(timeout_ms) + " ms");
  }
  return status();
}

Status SqliteSink::finish() {
  Impl& im = *impl_;
  std::lock_guard lock(im.finish_mu);
  if (im.finished) return status();
  im.finished = true;
  const ScopedNoSigxfsz no_sigxfsz;
  im.stop = true;
  im.queue.close();
  if (im.thread.joinable()) im.thread.join();
  if (!im.failed) {
    if (Status s = im.assembler->finish(im.snapshot()); !s.ok()) im.fail(s);
  }
  Status s = im.writer->close();
  if (!s.ok() && !im.failed) im.fail(s);
  return status();
}

Status SqliteSink::status() const {
  std::lock_guard lock(impl_->status_mu);
  return impl_->status;
}

SinkStats SqliteSink::stats() const {
  return impl_->snapshot();
}

const std::string& SqliteSink::path() const {
  return impl_->path;
}

void SqliteSink::abandonAfterFork() {
  // The writer thread and the SQLite connection belong to the parent: touch neither, never join. The Impl is
  // deliberately leaked (destroying a joinable std::thread would terminate the child).
  impl_->queue.closeInChild();
  impl_->failed = true;
  impl_->finished = true;
  (void)impl_.release();
}

}  // namespace kfuse::collector
