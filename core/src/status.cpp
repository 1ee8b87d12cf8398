#include "kfuse/core/status.h"

namespace kfuse {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kBadFormat: return "bad format";
    case ErrorCode::kUnsupportedVersion: return "unsupported version";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kCancelled: return "cancelled";
  }
  return "unknown error";
}

}  // namespace kfuse
