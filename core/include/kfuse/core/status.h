// Status and Expected<T>: the error channel for operation failures (tier 2 in STYLE.md).
//
// A Status is either ok or carries an ErrorCode and a message a user can act on (name the file, the
// line:column, what was expected). Expected<T> holds either a T or a non-ok Status. Neither throws; both are
// cheap to move. Not thread-safe to share a single instance across threads while mutating it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace kfuse {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,     // the caller passed something unusable
  kNotFound,            // a file, table, kernel... does not exist
  kIoError,             // the OS or SQLite failed to read or write
  kBadFormat,           // the input exists but is not what it claims to be, or is corrupt
  kUnsupportedVersion,  // the input is of a version this build does not understand
  kUnsupported,         // a valid request this build cannot serve
  kInternal,            // a bug in kfuse
  kCancelled,           // the caller asked the work to stop (core/cancel.h)
};

const char* errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status okStatus() { return {}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy with `context` put in front of the message ("context: message").
  Status withContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) {
  return {ErrorCode::kInvalidArgument, std::move(m)};
}
inline Status notFound(std::string m) {
  return {ErrorCode::kNotFound, std::move(m)};
}
inline Status ioError(std::string m) {
  return {ErrorCode::kIoError, std::move(m)};
}
inline Status badFormat(std::string m) {
  return {ErrorCode::kBadFormat, std::move(m)};
}
inline Status unsupportedVersion(std::string m) {
  return {ErrorCode::kUnsupportedVersion, std::move(m)};
}
inline Status unsupported(std::string m) {
  return {ErrorCode::kUnsupported, std::move(m)};
}
inline Status internalError(std::string m) {
  return {ErrorCode::kInternal, std::move(m)};
}

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : data_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Expected(Status status) : data_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(data_).ok()) data_ = Status(ErrorCode::kInternal, "Expected built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(data_);
  }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace kfuse

// Propagates a non-ok Status out of the enclosing function.
#define KFUSE_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::kfuse::Status kfuse_status_ = (expr);        \
    if (!kfuse_status_.ok()) return kfuse_status_; \
  } while (false)

#define KFUSE_CONCAT_INNER_(a, b) a##b
#define KFUSE_CONCAT_(a, b) KFUSE_CONCAT_INNER_(a, b)

// `KFUSE_ASSIGN_OR_RETURN(auto x, makeX());` assigns the value or returns the error Status.
#define KFUSE_ASSIGN_OR_RETURN(lhs, expr) \
  KFUSE_ASSIGN_OR_RETURN_IMPL_(KFUSE_CONCAT_(kfuse_expected_, __LINE__), lhs, expr)
#define KFUSE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

// Broken invariants (tier 3): always on. The condition must have no side effects.
#define KFUSE_CHECK(cond)                                                                             \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      std::fprintf(stderr, "kfuse: internal check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                                   \
    }                                                                                                 \
  } while (false)

#ifdef NDEBUG
#define KFUSE_DCHECK(cond) \
  do {                     \
  } while (false && (cond))
#else
#define KFUSE_DCHECK(cond) KFUSE_CHECK(cond)
#endif
