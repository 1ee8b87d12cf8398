// TraceSink: where both collector backends (hook, CUPTI) put what they observe.
//
// Producers (application threads inside hooks, CUPTI's buffer threads) push raw events (events.h). A sink turns
// them into core::Trace records with a TraceAssembler (ids, stream and function tables, pointer resolution) and
// stores them:
//   - SqliteSink: a bounded ring buffer drained by one background thread into a core::TraceWriter. Memory is
//     bounded by SqliteSinkOptions; when the ring is full a producer waits up to `block_timeout_ms` for the
//     writer (back-pressure), then drops the event and counts it ("collector_dropped_events" in the trace's
//     stat table). Everything committed survives a SIGKILL of the process (WAL, periodic commits).
//   - MemorySink: assembles synchronously into an in-memory core::Trace (tests).
// Thread-safety: push() from any number of threads; finish()/stats() from any thread. push() never allocates for
// events that fit the ring, never throws and never blocks longer than the configured timeout.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "kfuse/collector/events.h"
#include "kfuse/core/stats.h"
#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::collector {

struct SinkStats {
  uint64_t events = 0;          // accepted
  uint64_t dropped = 0;         // refused: queue full past the timeout, or the sink failed/finished
  uint64_t dropped_images = 0;  // module images left out (image budget exhausted); the module is still recorded
  uint64_t waits = 0;           // pushes that had to wait for the writer (back-pressure)
  uint64_t max_queued_bytes = 0;
  uint64_t written = 0;  // events the assembler consumed
};

class TraceSink {
 public:
  using FillFn = void (*)(uint8_t* dst, const void* ctx);

  virtual ~TraceSink() = default;

  // Appends one event whose payload is `size` bytes, written in place by `fill(dst, ctx)` (called with the
  // queue's lock held: copy, do not call out). Returns false if the event was dropped.
  virtual bool push(EventKind kind, size_t size, FillFn fill, const void* ctx) = 0;

  // A fixed struct followed by up to two byte ranges.
  template <class T>
  bool pushStruct(EventKind kind, const T& fixed, const void* tail = nullptr, size_t tail_size = 0,
                  const void* tail2 = nullptr, size_t tail2_size = 0) {
    struct Ctx {
      const T* fixed;
      const void* tail;
      size_t tail_size;
      const void* tail2;
      size_t tail2_size;
    } ctx{&fixed, tail, tail_size, tail2, tail2_size};
    return push(
        kind, sizeof(T) + tail_size + tail2_size,
        [](uint8_t* dst, const void* c) {
          const auto* x = static_cast<const Ctx*>(c);
          std::memcpy(dst, x->fixed, sizeof(T));
          if (x->tail_size) std::memcpy(dst + sizeof(T), x->tail, x->tail_size);
          if (x->tail2_size) std::memcpy(dst + sizeof(T) + x->tail_size, x->tail2, x->tail2_size);
        },
        &ctx);
  }

  // A producer-side statistic (stat table row; values of the same name are summed), as registered in
  // kfuse/core/stats.h; a non-null `detail` replaces the registered description. Texts are cut to the fields.
  bool pushStat(core::StatId id, int64_t value, const char* detail = nullptr) {
    const core::StatInfo& info = core::statInfo(id);
    StatEvent s;
    s.value = value;
    s.severity = static_cast<uint32_t>(info.severity);
    std::snprintf(s.name, sizeof s.name, "%s", info.name);
    std::snprintf(s.description, sizeof s.description, "%s", detail && *detail ? detail : info.description);
    return pushStruct(EventKind::kStat, s);
  }

  // Queues a module load. Takes ownership of `ev.image` (a new[] copy): freed by the sink, also when the
  // image or the event is dropped.
  virtual bool pushModule(const ModuleEvent& ev) = 0;

  // Numbers API calls for backends that have no correlation ids of their own (the hook backend).
  int64_t nextCorrelationId() { return next_correlation_.fetch_add(1, std::memory_order_relaxed) + 1; }

  // Stores everything pushed so far, the statistics, and closes the output. Idempotent; pushes after finish()
  // are dropped. Returns the first error met while writing (the trace then holds what was committed before it).
  virtual Status finish() = 0;
  // The first write error, if any (ok while healthy).
  virtual Status status() const = 0;
  virtual SinkStats stats() const = 0;

 private:
  std::atomic<int64_t> next_correlation_{0};
};

struct SqliteSinkOptions {
  size_t queue_bytes = 64u << 20;          // ring capacity
  size_t image_budget_bytes = 256u << 20;  // module images queued but not yet written
  int block_timeout_ms = 2000;             // how long a full queue holds a producer before dropping
  int flush_interval_ms = 200;             // commit at least this often (what a SIGKILL can lose)
  size_t batch_rows = 8192;
  bool overwrite = false;
  core::TraceMetadata metadata;
  int64_t pid = 0;  // recorded process (0 = this one)
  std::string process_name;
};

class SqliteSink : public TraceSink {
 public:
  // Creates the trace file and starts the writer thread. Fails (kIoError/kInvalidArgument, naming the path) if
  // the file cannot be created.
  static Expected<std::unique_ptr<SqliteSink>> open(const std::string& path, SqliteSinkOptions options = {});
  ~SqliteSink() override;  // finish()es

  bool push(EventKind kind, size_t size, FillFn fill, const void* ctx) override;
  bool pushModule(const ModuleEvent& ev) override;
  Status finish() override;
  Status status() const override;
  SinkStats stats() const override;
  const std::string& path() const;

  // Commits what the writer has consumed so far (waits until the queue is drained, at most `timeout_ms`).
  Status flush(int timeout_ms = 5000);

  // After fork() in the child: the writer thread does not exist there. Forgets everything without touching the
  // file or joining; the sink drops every later push. Async-signal-unsafe parts are avoided.
  void abandonAfterFork();

 private:
  struct Impl;
  explicit SqliteSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class MemorySink : public TraceSink {
 public:
  explicit MemorySink(core::TraceMetadata metadata = {}, int64_t pid = 1);
  ~MemorySink() override;
  bool push(EventKind kind, size_t size, FillFn fill, const void* ctx) override;
  bool pushModule(const ModuleEvent& ev) override;
  Status finish() override;
  Status status() const override;
  SinkStats stats() const override;
  // The assembled trace; complete after finish().
  const core::Trace& trace() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kfuse::collector
