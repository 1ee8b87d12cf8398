#include "temp_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>

namespace kfuse::testing {
namespace {

std::mutex g_mu;
std::set<std::filesystem::path>* g_dirs = nullptr;  // never destroyed: read by the exit handler

void removeAll() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_dirs) return;
  for (const auto& d : *g_dirs) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
}

}  // namespace

std::filesystem::path processTempDir(const std::string& prefix) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_dirs) {
    g_dirs = new std::set<std::filesystem::path>();
    std::atexit(removeAll);
  }
  g_dirs->insert(dir);
  return dir;
}

}  // namespace kfuse::testing
