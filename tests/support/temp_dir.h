// One scratch directory per test process: created on first use under the system temp directory, and removed with
// everything in it when the process exits, so test runs leave nothing behind in /tmp.
#pragma once

#include <filesystem>
#include <string>

namespace kfuse::testing {

// `<tmp>/<prefix><pid>`, created if needed. The same prefix gives the same directory for the whole process; every
// directory handed out is removed at exit (atexit), also when a test fails.
std::filesystem::path processTempDir(const std::string& prefix);

}  // namespace kfuse::testing
