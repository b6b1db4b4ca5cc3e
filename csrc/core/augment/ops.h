// SPDX-License-Identifier: BSD-3-Clause
// Per-sample augmentation programs of the batch op: their checks and their run, and the image the kernels work on.
// A program is K rows (op_table.h: each op, its code and its named arguments) run in order on the sample's uint8 RGB
// crop after the resample and before the dtype conversion / normalisation; the erase rows are written into the
// finished slot (erase.h). The layout of both, as users read it: decode_images' docstring (spdl_torch/io/_batch.py),
// written from the same table.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/augment/op_table.h"

namespace spdl_torch::core::augment {

// An interleaved RGB uint8 image, rows width * 3 bytes apart.
struct RgbImage {
  uint8_t* data = nullptr;
  int64_t height = 0;
  int64_t width = 0;
  int64_t pixels() const { return height * width; }
};

// Throws InvalidArgument naming `where` (e.g. "augment[3, 1]") for a row whose code is not in the table ("augment
// code N not supported") or one of whose arguments is outside what the table declares ("affine shear[1]: expected
// ..., got ..."). Code 0 rows are accepted whatever their other columns hold.
void validate_step(const float* row, const std::string& where);

// Throws InvalidArgument naming `where` for an erase row outside kEraseArgs (a mode "off" row is not read further).
void validate_erase(const float* row, const std::string& where);

// validate_step on each of a sample's `steps` rows (row k named where(k)), and the nesting of its mix rows:
// a mix_add or mix_end outside a mix, a mix_begin inside one, or a mix still open after the last row throws
// InvalidArgument naming the row.
void validate_program(const float* rows, int64_t steps, const std::function<std::string(int64_t)>& where);

// Whether any of the `steps` rows is not a no-op.
bool has_program(const float* rows, int64_t steps);

// Runs the rows in order on `image` in place (rows must be valid: validate_program), with one ProgramState
// (program.h) for the whole program.
void run_program(const float* rows, int64_t steps, const RgbImage& image);

// What a value of `arg` must be, as the checks' messages and the docs say it ("a finite number in (-90, 90)").
std::string arg_rule(const Arg& arg);

// The table (kOps, kEraseArgs) as JSON, read by spdl_torch/transforms/_augment_codes.py through the op
// spdl_torch::augment_op_table:
// {"columns", "erase_columns", "ops": [{"code", "name", "doc", "args"}], "erase": [args]}; each argument
// {"name", "kind" ("real", "integer" or "choice"), "count", "low", "high" (null: unbounded), "low_open",
// "high_open", "finite", "odd", "choices", "none" (the value standing for None, or null), "default" (or null),
// "doc", "rule" (arg_rule)}.
std::string op_table_json();

// A row built by argument name, as Python's spdl_torch._augment_ops.augment_row builds it (for tests, benchmarks
// and fuzzing): Row("affine").set("angle", 17).set("translate", {0, 0}).set("shear", {0, 0}).values(). An unknown
// op or argument, a wrong number of values, an unknown choice or a missing argument without a default throws
// InvalidArgument; the values themselves are checked by validate_step.
class Row {
 public:
  explicit Row(const char* op);
  Row& set(const char* arg, std::initializer_list<float> values);
  Row& set(const char* arg, float value) { return set(arg, {value}); }
  Row& set(const char* arg, const char* choice);
  std::vector<float> values() const;  // kColumns floats

 private:
  const OpSpec* op_;
  float columns_[kColumns] = {};
  bool given_[kMaxArgs] = {};
};

}  // namespace spdl_torch::core::augment
