// SPDX-License-Identifier: BSD-3-Clause
// What the program runner (program.cpp) gives each op's runner: the row's arguments by name and the state a sample's
// program carries from row to row. Each op of SPDL_TORCH_AUGMENT_OPS (op_table.h) has one runner,
// run_op<Code::Name>, declared here and defined in the kernel file of its kind: it reads its arguments and calls
// its kernel (kernels.h). A missing runner is a link error naming the op.
#pragma once

#include <cstdint>

#include "core/augment/op_table.h"
#include "core/augment/ops.h"
#include "core/augment/scratch.h"

namespace spdl_torch::core::augment {

// AugMix's mix in progress (mix_begin .. mix_end): the chains' source and the float32 sum, in this thread's
// scratch buffers.
struct MixState {
  ScratchBuffer<uint8_t, struct MixSource> source;
  ScratchBuffer<float, struct MixSum> sum;
  bool open = false;
};

// The state of one sample's program, owned by run_program: the fill colour of the pil_affine rows (black until a
// fill row: Pillow's default), the pil_affine_low parts waiting for the next pil_affine row, and the mix.
struct ProgramState {
  uint8_t fill[3] = {0, 0, 0};
  double low[6] = {0, 0, 0, 0, 0, 0};
  MixState mix;
};

// The arguments of one valid row (validate_step, validate_erase), read by the names the table gives them.
class Args {
 public:
  Args(const OpSpec& op, const float* columns) : Args(op.name, op.args, op.num_args, columns) {}
  Args(const char* owner, const Arg* args, int num_args, const float* columns)
      : owner_(owner), args_(args), num_args_(num_args), columns_(columns) {}

  // Component k of argument `name` (an unknown name or k out of its count is a bug: InternalError).
  float real(const char* name, int k = 0) const { return columns_[column(name, k)]; }
  int integer(const char* name, int k = 0) const { return int(real(name, k)); }
  int choice(const char* name) const { return int(real(name)); }

 private:
  int column(const char* name, int k) const;
  const char* owner_;
  const Arg* args_;
  int num_args_;
  const float* columns_;
};

template <Code C>
void run_op(const RgbImage& image, const Args& args, ProgramState& state);

#define SPDL_TORCH_AUGMENT_RUNNER(code, Name, ...) \
  template <>                                      \
  void run_op<Code::Name>(const RgbImage& image, const Args& args, ProgramState& state);
SPDL_TORCH_AUGMENT_OPS(SPDL_TORCH_AUGMENT_RUNNER)
#undef SPDL_TORCH_AUGMENT_RUNNER

}  // namespace spdl_torch::core::augment
