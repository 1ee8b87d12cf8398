// writeFileAtomically: a temporary file and a rename (see files.h).
#include "kfuse/core/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kfuse::core {

Status writeFileAtomically(const std::string& path, std::string_view bytes) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp = dir + "." + name + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return ioError(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    const std::string why = std::strerror(written ? errno : write_errno);
    std::remove(tmp.c_str());
    return ioError(path + ": write failed (" + why + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return ioError(path + ": cannot replace: " + why);
  }
  return {};
}

}  // namespace kfuse::core
