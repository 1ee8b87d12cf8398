#include "recording_status.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace kfuse::collector {

void reportRecordingFailure(const std::string& message) {
  const char* v = std::getenv("KFUSE_STATUS_FD");
  if (!v || !*v) return;
  char* end = nullptr;
  const long fd = std::strtol(v, &end, 10);
  if (*end != 0 || fd < 0 || fd > 1 << 20) return;
  // Only a socket: the application may have closed the descriptor and opened one of its own files under the number.
  struct stat st {};
  if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) return;
  const std::string line = message + "\n";
  (void)send(static_cast<int>(fd), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

ScopedNoSigxfsz::ScopedNoSigxfsz() {
  sigset_t pending, block;
  sigemptyset(&pending);
  was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1;
  sigemptyset(&block);
  sigaddset(&block, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask_);
}

ScopedNoSigxfsz::~ScopedNoSigxfsz() {
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, SIGXFSZ);
  sigset_t pending;
  sigemptyset(&pending);
  if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1) {
    const timespec zero{0, 0};
    while (sigtimedwait(&only, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace kfuse::collector
