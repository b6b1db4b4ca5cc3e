// Exceptions thrown by the core. Plain C++: the torch binding turns them into Python exceptions.
#pragma once

#include <stdexcept>
#include <string>

namespace spdl_torch::core {

// The encoded data could not be decoded (corrupt, truncated, unsupported, over a resource limit).
// The message names the format and the decoder's own reason.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller passed an invalid argument (unknown mode, bad size, ...).
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Thrown by the file reader when a file cannot be opened or read; code() is the errno value (0 if none).
class IOError : public std::runtime_error {
 public:
  IOError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace spdl_torch::core
