// How the collector, inside the recorded program, tells `kfuse record` that the recording failed (a full disk,
// an unwritable output, a file size limit): a line per failure on the socket `kfuse record` passes as
// KFUSE_STATUS_FD. Sending never blocks and never raises SIGPIPE, so the application is unaffected when kfuse is
// gone or the descriptor was closed or reused by the application.
//
// And how the collector's own writes stay out of the application's signal handling: a write past RLIMIT_FSIZE
// raises SIGXFSZ, whose default action kills the process. The collector blocks it in the threads that write the
// trace, so its write fails with EFBIG instead, and leaves the application's disposition alone.
#pragma once

#include <signal.h>

#include <string>

namespace kfuse::collector {

// Sends "MESSAGE\n" to KFUSE_STATUS_FD when that is set and names a socket; otherwise does nothing.
void reportRecordingFailure(const std::string& message);

// Blocks SIGXFSZ in the calling thread for its lifetime; on destruction, discards a SIGXFSZ that the collector's
// writes left pending on this thread and restores the thread's mask.
class ScopedNoSigxfsz {
 public:
  ScopedNoSigxfsz();
  ~ScopedNoSigxfsz();
  ScopedNoSigxfsz(const ScopedNoSigxfsz&) = delete;
  ScopedNoSigxfsz& operator=(const ScopedNoSigxfsz&) = delete;

 private:
  sigset_t old_mask_;
  bool was_pending_ = false;
};

}  // namespace kfuse::collector
