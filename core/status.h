// Status and Result<T>: how every fallible function in core/, sim/ and runtime/ reports an error.
// leveldb's shape: a cheap ok() path, a code and a message. No exception crosses these headers.
// Thread-safety: value types, safe to copy between threads.
#ifndef MESHPLAN_CORE_STATUS_H_
#define MESHPLAN_CORE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace meshplan::core {

class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kUnavailable, kIoError, kInternal };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status IoError(std::string msg) { return Status(Code::kIoError, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status saying why there is none. REQUIRES: value() only when ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "Result from an ok Status carries no value");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T& value() & {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  const T* operator->() const { return &value(); }
  const T& operator*() const { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

// "file.cc:123" for an error message that places a failing call: the source file's name without
// the directories the build machine compiled it from (__FILE__ holds them), which say nothing to
// the user who reads it.
inline std::string SourcePlace(const char* file, int line) {
  const std::string path = file ? file : "";
  return path.substr(path.find_last_of('/') + 1) + ":" + std::to_string(line);
}

}  // namespace meshplan::core

#endif  // MESHPLAN_CORE_STATUS_H_
