// Result<T>: the std::expected-style return type for every recoverable error.
// C++20 has no std::expected (GCC 12 only offers it in C++23 mode), so this is
// the smallest subset we use: a value or an Error, never both, never neither.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace goscope {

// Each kind maps to one documented exit code (see exitCodeFor and docs/errors.md).
enum class ErrorKind {
  Internal,    // a bug or an unexpected system failure
  Usage,       // bad flags, malformed pattern or spec
  NotFound,    // a file or PID that does not exist
  BadTarget,   // not ELF, not Go, no debug info where it is needed
  NoMatch,     // a pattern or symbol that matches nothing
  Permission,  // missing privileges or capabilities
  External,    // a helper program (dlv, go, bpftrace) is missing or failed
  TargetGone,  // the target exited during the session
  Interrupted, // Ctrl-C (or SIGTERM) before the session started: nothing left attached; exit 0 like any stop
};

struct Error {
  ErrorKind kind = ErrorKind::Internal;
  std::string message;  // one line, says what went wrong and with what
  std::string hint;     // optional: how to fix it
};

inline int exitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Internal: return 1;
    case ErrorKind::Usage: return 2;
    case ErrorKind::NotFound: return 3;
    case ErrorKind::BadTarget: return 4;
    case ErrorKind::NoMatch: return 5;
    case ErrorKind::Permission: return 6;
    case ErrorKind::External: return 7;
    case ErrorKind::TargetGone: return 8;
    case ErrorKind::Interrupted: return 0;
  }
  return 1;
}

// Wrapper so `return fail(...)` converts to any Result<T>.
struct Failure {
  Error error;
};

inline Failure fail(ErrorKind kind, std::string message, std::string hint = {}) {
  return Failure{Error{kind, std::move(message), std::move(hint)}};
}
inline Failure fail(Error e) { return Failure{std::move(e)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Failure f) : v_(std::in_place_index<1>, std::move(f.error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }
  Failure failure() const { return Failure{error()}; }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Failure f) : err_(std::move(f.error)), ok_(false) {}
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }
  Failure failure() const { return Failure{err_}; }

 private:
  Error err_;
  bool ok_ = true;
};

// The one fatal error type: thrown only by the CLI layer, caught only in main.
struct FatalError {
  Error error;
};

[[noreturn]] inline void raise(const Error& e) { throw FatalError{e}; }

template <class T>
T orRaise(Result<T>&& r) {
  if (!r) raise(r.error());
  return std::move(r).value();
}

inline void orRaise(Result<void>&& r) {
  if (!r) raise(r.error());
}

}  // namespace goscope
