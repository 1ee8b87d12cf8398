// Names of CUDA runtime / driver and HIP API calls as profilers record them, shared by the importers.
// Private to the analyzer.
#pragma once

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "kfuse/core/trace.h"

namespace kfuse::analyzer::detail {

inline std::string_view apiBaseName(std::string_view name) {
  // Nsight-style version suffixes ("cudaLaunchKernel_v7000") and ptsz/ptds variants name the same call.
  const size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(v) + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    name = name.substr(0, v);
  }
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      name.remove_suffix(suffix.size());
    }
  }
  return name;
}

// Host-side synchronisation calls by (base) name, CUDA runtime, driver and HIP.
inline std::optional<core::SyncKind> syncKindOfApi(std::string_view api) {
  api = apiBaseName(api);
  static constexpr std::pair<std::string_view, core::SyncKind> kCalls[] = {
      {"cudaDeviceSynchronize", core::SyncKind::kContext},
      {"cudaThreadSynchronize", core::SyncKind::kContext},
      {"cuCtxSynchronize", core::SyncKind::kContext},
      {"hipDeviceSynchronize", core::SyncKind::kContext},
      {"cudaStreamSynchronize", core::SyncKind::kStream},
      {"cuStreamSynchronize", core::SyncKind::kStream},
      {"hipStreamSynchronize", core::SyncKind::kStream},
      {"cudaEventSynchronize", core::SyncKind::kEvent},
      {"cuEventSynchronize", core::SyncKind::kEvent},
      {"hipEventSynchronize", core::SyncKind::kEvent},
      {"cudaStreamWaitEvent", core::SyncKind::kStreamWaitEvent},
      {"cuStreamWaitEvent", core::SyncKind::kStreamWaitEvent},
      {"hipStreamWaitEvent", core::SyncKind::kStreamWaitEvent},
  };
  for (const auto& [n, k] : kCalls) {
    if (api == n) return k;
  }
  return std::nullopt;
}

inline bool isEventRecordApi(std::string_view api) {
  api = apiBaseName(api);
  return api == "cudaEventRecord" || api == "cudaEventRecordWithFlags" || api == "cuEventRecord" ||
         api == "cuEventRecordWithFlags" || api == "hipEventRecord";
}

// A CUDA / HIP graph launch: every kernel it runs shares the call's correlation id.
inline bool isGraphLaunchApi(std::string_view api) {
  api = apiBaseName(api);
  return api == "cudaGraphLaunch" || api == "cuGraphLaunch" || api == "hipGraphLaunch";
}

}  // namespace kfuse::analyzer::detail
