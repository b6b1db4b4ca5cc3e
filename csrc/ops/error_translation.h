// SPDX-License-Identifier: BSD-3-Clause
// The one place where a core exception becomes a torch error. A native error crosses the op boundary as a
// RuntimeError whose message starts with a tag, in this grammar (spdl_torch/_errors.py parses it):
//
//   [<Kind>( <key>=<value>)*] <reason>
//
// Kind: DecodeError (the data cannot be decoded), OSError (a file cannot be read; key errno=<int>) or
// InternalError (a bug of the library). Key sample=<int>: the index of the sample in a batch op's input.
// Values are decimal integers. Invalid arguments are not tagged: they are ValueErrors naming the op.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/errors.h"

namespace spdl_torch::ops {

struct TagField {
  const char* key;  // "errno" or "sample"
  int64_t value;
};

// "[<kind> key=value ...] <reason>".
std::string tagged_message(const char* kind, std::initializer_list<TagField> fields, const std::string& reason);

// Throws a c10::Error (a RuntimeError in Python) with tagged_message(kind, fields, reason).
[[noreturn]] void throw_tagged(const char* kind, std::initializer_list<TagField> fields, const std::string& reason);

// Runs fn(), turning core exceptions into tagged errors (InvalidArgument into a ValueError "<op>: ...").
template <typename Fn>
auto translate_core_errors(const char* op, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const core::DecodeError& e) {
    throw_tagged("DecodeError", {}, e.what());
  } catch (const core::IOError& e) {
    throw_tagged("OSError", {{"errno", e.code()}}, e.what());
  } catch (const core::InternalError& e) {
    if (e.sample() >= 0) throw_tagged("InternalError", {{"sample", e.sample()}}, e.what());
    throw_tagged("InternalError", {}, e.what());
  } catch (const core::InvalidArgument& e) {
    TORCH_CHECK_VALUE(false, op, ": ", e.what());
  }
}

// Checks that `data` holds encoded bytes: a 1-D uint8 CPU tensor.
void check_encoded_bytes(const at::Tensor& data, const char* op);

}  // namespace spdl_torch::ops
