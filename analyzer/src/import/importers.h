// The built-in importers and what they share. Private to the analyzer: users go through ImporterRegistry.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "kfuse/analyzer/importer.h"
#include "kfuse/core/trace.h"

namespace kfuse::analyzer::detail {

std::unique_ptr<Importer> makeKfuseTraceImporter();
std::unique_ptr<Importer> makeKfuseJsonImporter();
std::unique_ptr<Importer> makeKinetoImporter();
std::unique_ptr<Importer> makeNsysImporter();

// Writes devices, contexts, streams and kernel functions into a Trace, creating each once, for importers of
// formats that identify them by numbers and names. Create every stream before the records that use it when ids
// should follow (device ordinal, native stream id): call stream() over the sorted keys first.
class ModelTracker {
 public:
  explicit ModelTracker(core::Trace& trace) : trace_(trace) {}

  // Adds a device described by the input; a later device() with the same ordinal returns it.
  core::Id addDevice(core::Device device);
  // The device with this ordinal, created nameless (`created` set) when the input never described it.
  core::Id device(int64_t ordinal, bool* created = nullptr);
  // One context per device.
  core::Id context(int64_t device_ordinal);
  // One stream per (device, native stream id); native_id keeps the input's number.
  core::Id stream(int64_t device_ordinal, int64_t native_stream);
  // One function per (mangled, demangled) pair.
  core::Id function(std::string_view mangled, std::string_view demangled);
  // The process with this pid, created with `name` on first use.
  core::Id process(int64_t pid, std::string_view name = {});

  void setContextProcess(core::Id process_id);  // for every context created so far

 private:
  core::Trace& trace_;
  std::map<int64_t, core::Id> devices_;
  std::map<int64_t, core::Id> contexts_;
  std::map<std::pair<int64_t, int64_t>, core::Id> streams_;
  std::map<std::pair<std::string, std::string>, core::Id, std::less<>> functions_;
  std::map<int64_t, core::Id> processes_;
};

// Metadata every importer sets: producer "kfuse-import:<format>", version, and extra.source_path.
void setImportMetadata(core::TraceMetadata& metadata, std::string_view format, const std::string& path);

}  // namespace kfuse::analyzer::detail
