#include <mutex>
#include <vector>

#include "kfuse/collector/trace_sink.h"
#include "trace_assembler.h"

namespace kfuse::collector {

struct MemorySink::Impl {
  std::mutex mu;
  core::Trace trace;
  TraceOutput output{trace};
  TraceAssembler assembler;
  std::vector<uint8_t> buffer;
  SinkStats stats;
  bool finished = false;
  Status status;
  Impl(core::TraceMetadata meta, int64_t pid) : assembler(output, AssemblerOptions{pid, "", 1u << 16}) {
    trace.metadata = std::move(meta);
    if (trace.metadata.producer.empty()) trace.metadata.producer = "kfuse-collector";
  }
};

MemorySink::MemorySink(core::TraceMetadata metadata, int64_t pid)
    : impl_(std::make_unique<Impl>(std::move(metadata), pid)) {}
MemorySink::~MemorySink() = default;

bool MemorySink::push(EventKind kind, size_t size, FillFn fill, const void* ctx) {
  std::lock_guard lock(impl_->mu);
  if (impl_->finished) {
    ++impl_->stats.dropped;
    return false;
  }
  impl_->buffer.resize(size);
  if (size) fill(impl_->buffer.data(), ctx);
  ++impl_->stats.events;
  ++impl_->stats.written;
  Status s = impl_->assembler.consume(kind, impl_->buffer.data(), size);
  if (!s.ok() && impl_->status.ok()) impl_->status = s;
  return true;
}

bool MemorySink::pushModule(const ModuleEvent& ev) {
  if (pushStruct(EventKind::kModule, ev)) return true;  // the assembler freed the image
  delete[] ev.image;
  return false;
}

Status MemorySink::finish() {
  std::lock_guard lock(impl_->mu);
  if (impl_->finished) return impl_->status;
  impl_->finished = true;
  Status s = impl_->assembler.finish(impl_->stats);
  if (!s.ok() && impl_->status.ok()) impl_->status = s;
  return impl_->status;
}

Status MemorySink::status() const {
  return impl_->status;
}
SinkStats MemorySink::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}
const core::Trace& MemorySink::trace() const {
  return impl_->trace;
}

}  // namespace kfuse::collector
