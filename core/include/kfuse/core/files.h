// Writing files so that a reader never sees half of one.
#pragma once

#include <string>
#include <string_view>

#include "kfuse/core/status.h"

namespace kfuse::core {

// Writes `bytes` to `path` through a temporary file beside it (named with the process id, so two processes
// writing one path do not share it) and a rename, which is atomic within a directory: a reader sees the old file
// or the whole new one. On failure the temporary file is removed and `path` is left as it was; the error
// (kIoError) names the file and why. Throws nothing: the injector calls it at exit.
Status writeFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace kfuse::core
