// SPDX-License-Identifier: BSD-3-Clause
// Program rows: their checks, read from the op table (op_table.h), and their run: one ProgramState per program,
// each row dispatched to its op's runner (program.h).
#include "core/augment/program.h"

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "core/errors.h"

namespace spdl_torch::core::augment {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InvalidArgument(where + ": " + what); }

std::string num(float v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool is_int(float v) { return std::isfinite(v) && v == std::floor(v); }

// Whether `v` is a value of `a` (arg_rule says which).
bool accepts(const Arg& a, float v) {
  if (a.has_none && v == float(a.none_value)) return true;
  if (std::isnan(v) || (!a.infinite && std::isinf(v))) return false;
  if (a.kind != ArgKind::Real && !is_int(v)) return false;
  if (a.odd && std::fmod(v, 2.0f) == 0) return false;
  const double d = v;
  return (a.low_open ? d > a.low : d >= a.low) && (a.high_open ? d < a.high : d <= a.high);
}

// The arguments of one row (`columns`: the first argument's column): each value checked against its argument.
void check_args(const char* op, const Arg* args, int num_args, const float* columns, const std::string& where) {
  for (int k = 0; k < num_args; ++k) {
    const Arg& a = args[k];
    for (int c = 0; c < a.count; ++c, ++columns) {
      if (accepts(a, *columns)) continue;
      const std::string name = a.count == 1 ? a.name : std::string(a.name) + "[" + std::to_string(c) + "]";
      bad(where, std::string(op) + " " + name + ": expected " + arg_rule(a) + ", got " + num(*columns));
    }
  }
}

bool is_code(float v, Code code) { return v == float(int(code)); }

}  // namespace

int Args::column(const char* name, int k) const {
  int column = 0;
  for (int a = 0; a < num_args_; ++a) {
    if (same_name(args_[a].name, name)) {
      if (k < 0 || k >= args_[a].count) break;
      return column + k;
    }
    column += args_[a].count;
  }
  throw InternalError(std::string("augment: ") + owner_ + " has no argument " + name + "[" + std::to_string(k) + "]");
}

void validate_step(const float* row, const std::string& where) {
  const float code = row[0];
  if (code == 0) return;
  if (!is_int(code) || code < 0 || code > kMaxCode) {
    bad(where,
        "augment code " + num(code) + " not supported (expected an integer 0.." + std::to_string(kMaxCode) + ")");
  }
  const OpSpec& op = kOps[int(code)];
  check_args(op.name, op.args, op.num_args, row + 1, where);
}

void validate_program(const float* rows, int64_t steps, const std::function<std::string(int64_t)>& where) {
  int64_t open = -1;  // the row of the mix in progress
  for (int64_t k = 0; k < steps; ++k) {
    const float* r = rows + k * kColumns;
    validate_step(r, where(k));
    if (is_code(r[0], Code::MixBegin)) {
      if (open >= 0) {
        bad(where(k), "mix_begin inside the mix begun at row " + std::to_string(open) + " (mixes do not nest)");
      }
      open = k;
    } else if (is_code(r[0], Code::MixAdd) || is_code(r[0], Code::MixEnd)) {
      if (open < 0) bad(where(k), std::string(kOps[int(r[0])].name) + " without a mix_begin before it");
      if (is_code(r[0], Code::MixEnd)) open = -1;
    }
  }
  if (open >= 0) bad(where(open), "mix_begin without a mix_end (the program ends inside the mix)");
}

void validate_erase(const float* row, const std::string& where) {
  check_args("erase", kEraseArgs, 1, row, where);
  if (row[0] == float(int(EraseMode::Off))) return;
  check_args("erase", kEraseArgs + 1, kNumEraseArgs - 1, row + kEraseArgs[0].count, where);
}

bool has_program(const float* rows, int64_t steps) {
  for (int64_t k = 0; k < steps; ++k) {
    if (rows[k * kColumns] != 0) return true;
  }
  return false;
}

void run_program(const float* rows, int64_t steps, const RgbImage& img) {
  if (img.pixels() <= 0) return;
  ProgramState state;
  for (int64_t k = 0; k < steps; ++k) {
    const float* r = rows + k * kColumns;
    const Code code = Code(int(r[0]));
    switch (code) {
#define SPDL_TORCH_AUGMENT_DISPATCH(code, Name, ...) \
  case Code::Name: run_op<Code::Name>(img, Args(op_spec(Code::Name), r + 1), state); continue;
      SPDL_TORCH_AUGMENT_OPS(SPDL_TORCH_AUGMENT_DISPATCH)
#undef SPDL_TORCH_AUGMENT_DISPATCH
    }
    throw InternalError("augment: code " + num(r[0]) + " reached run_program unvalidated");
  }
}

template <>
void run_op<Code::Identity>(const RgbImage&, const Args&, ProgramState&) {}

}  // namespace spdl_torch::core::augment
