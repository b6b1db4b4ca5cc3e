// SPDX-License-Identifier: BSD-3-Clause
// Exceptions thrown by the core. Plain C++: the torch binding turns them into Python exceptions.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace spdl_torch::core {

// The encoded data could not be decoded (corrupt, truncated, unsupported, over a resource limit).
// The message names the format and the decoder's own reason.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A broken invariant of the library itself ("this is a bug"), never a property of the input data. The
// batch decoder re-raises it instead of reporting the sample as corrupt. `sample` is the index of the
// batch input being processed when it happened (-1: none or unknown).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message, int64_t sample = -1)
      : std::logic_error(message), sample_(sample) {}
  int64_t sample() const { return sample_; }

 private:
  int64_t sample_;
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
