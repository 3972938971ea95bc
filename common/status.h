// Status and StatusOr<T>: recoverable failures as values.
//
// Every layer of Lockstep returns these instead of throwing; exceptions from
// third-party libraries are caught in the one adapter that calls the library.
// Thread-safety: values; copy freely, no shared state.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace lockstep {

enum class Code {
  kOk = 0,
  kInvalidArgument,    // bad input from a user: lock file, CR field, flag, kubeconfig
  kNotFound,           // 404
  kAlreadyExists,      // 409 with reason AlreadyExists
  kConflict,           // 409 resourceVersion conflict
  kInvalid,            // 422 rejected by the API server's validation
  kForbidden,          // 403
  kUnauthorized,       // 401
  kGone,               // 410: resourceVersion too old / expired
  kUnavailable,        // 5xx, 429, connection errors: retry with backoff
  kDeadlineExceeded,   // a timeout we imposed
  kResourceExhausted,  // input over a documented limit (docs/limits.md): bytes, lines, entries
  kCancelled,          // shutdown
  kInternal,           // a bug or an unexpected library failure
};

std::string_view codeName(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool isOk() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: configmaps \"x\" not found"
  std::string toString() const;

  // Adds context in front of the message, keeping the code: "reading lock: line 3: ...".
  Status withContext(std::string_view context) const;

  bool operator==(const Status& o) const { return code_ == o.code_ && message_ == o.message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status notFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status internalError(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status resourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).isOk() && "StatusOr built from an OK status");
  }

  bool isOk() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return isOk() ? kOkStatus : std::get<Status>(v_);
  }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace lockstep

// Propagates a non-OK Status from an expression returning Status.
#define LOCKSTEP_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::lockstep::Status _st = (expr);   \
    if (!_st.isOk()) return _st;       \
  } while (0)
