// SPDX-License-Identifier: BSD-3-Clause
// The augmentation ops of decode_images(augment=...), each declared once, in SPDL_TORCH_AUGMENT_OPS: its code, its
// name, one line of documentation and its named arguments (kind, range, number of columns, meaning). From this list
// come the Code enum, the checks of a row (validate_step), the dispatch to the kernels (run_program calls the op's
// runner run_op<Code::Name>, defined beside its kernel: program.h) and the table Python reads at import
// (op_table_json, returned by the op spdl_torch::augment_ops): spdl_torch/_augment_ops.py builds rows by argument
// name from it and writes the rows' section of decode_images' docstring (spdl_torch/io/_batch.py), the one place
// users read the row layout. The erase rows (kEraseArgs) are declared the same way.
//
// An augment row is kColumns floats: the code, then the op's arguments in their order, each taking `count`
// consecutive columns; the columns after the op's last argument are not read.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>

namespace spdl_torch::core::augment {

constexpr int kColumns = 8;       // an augment row: the code, then 7 argument columns
constexpr int kEraseColumns = 8;  // an erase row: its arguments only
constexpr int kMaxChoices = 4;
constexpr int kMaxArgs = kColumns - 1;
constexpr double kUnbounded = std::numeric_limits<double>::infinity();
constexpr float kNoFill = -1.0f;  // affine's fill=None (torchvision's: zero padding, no fill blend)

enum class ArgKind : int { Real, Integer, Choice };

// One named argument: `count` columns, each a value of its kind. Real: a number in [low, high] (an open end where
// low_open / high_open), finite unless `infinite` (then only NaN is refused), or none_value standing for Python's
// None (has_none). Integer: a whole number in [low, high], odd ones only where `odd`. Choice: the index 0..n-1 of
// one of `choices`. An argument with a default may be left out when a row is built by name.
struct Arg {
  const char* name = nullptr;
  ArgKind kind = ArgKind::Real;
  int count = 1;
  double low = -kUnbounded, high = kUnbounded;
  bool low_open = false, high_open = false;
  bool infinite = false;
  bool odd = false;
  bool has_none = false;
  double none_value = 0;
  bool has_default = false;
  double default_value = 0;
  const char* choices[kMaxChoices] = {};
  const char* doc = "";

  // This argument with one field changed (the builders below, chained in the table).
  template <typename T>
  constexpr Arg with(T Arg::*field, T value) const {
    Arg a = *this;
    a.*field = value;
    return a;
  }
  constexpr Arg times(int n) const { return with(&Arg::count, n); }
  constexpr Arg at_least(double v) const { return with(&Arg::low, v); }
  constexpr Arg above(double v) const { return at_least(v).with(&Arg::low_open, true); }
  constexpr Arg at_most(double v) const { return with(&Arg::high, v); }
  constexpr Arg below(double v) const { return at_most(v).with(&Arg::high_open, true); }
  constexpr Arg within(double lo, double hi) const { return at_least(lo).at_most(hi); }
  constexpr Arg not_nan() const { return with(&Arg::infinite, true); }
  constexpr Arg odd_only() const { return with(&Arg::odd, true); }
  constexpr Arg or_none(double v) const { return with(&Arg::has_none, true).with(&Arg::none_value, v); }
  constexpr Arg defaults_to(double v) const { return with(&Arg::has_default, true).with(&Arg::default_value, v); }
  constexpr int num_choices() const {
    int n = 0;
    while (n < kMaxChoices && choices[n] != nullptr) ++n;
    return n;
  }
};

constexpr Arg real(const char* name, const char* doc) {
  Arg a;
  a.name = name, a.doc = doc;
  return a;
}

constexpr Arg integer(const char* name, double low, double high, const char* doc) {
  Arg a = real(name, doc).within(low, high);
  a.kind = ArgKind::Integer;
  return a;
}

constexpr Arg choice(const char* name, std::initializer_list<const char*> names, const char* doc) {
  Arg a = real(name, doc);
  a.kind = ArgKind::Choice;
  int n = 0;
  for (const char* c : names) a.choices[n++] = c;
  return a.within(0, n - 1);
}

// One op: its code (its index in kOps), its name, its documentation and its arguments.
struct OpSpec {
  int code;
  const char* name;
  const char* doc;
  int num_args;
  Arg args[kMaxArgs];

  constexpr OpSpec(int c, const char* n, const char* d, std::initializer_list<Arg> a)
      : code(c), name(n), doc(d), num_args(int(a.size())), args{} {
    int k = 0;
    for (const Arg& x : a) args[k++] = x;
  }
  constexpr int columns() const {
    int n = 0;
    for (int k = 0; k < num_args; ++k) n += args[k].count;
    return n;
  }
};

// OP(code, Name, "name", "doc", arguments...): every op of the augment rows. Codes 1..13 follow
// torchvision.transforms.v2.functional's function of the same name on a uint8 [3, H, W] tensor (its float32
// arithmetic, rounding and truncation; the kernels name their exceptions), the others follow Pillow (what
// torchvision's transforms and timm's ops do to a PIL image) or mix AugMix's chains (17..19: mix_begin, then each
// chain's rows and its mix_add, then mix_end; a mix inside a mix, or a mix row out of that order, is refused).
#define SPDL_TORCH_AUGMENT_OPS(OP)                                                                                 \
  OP(0, Identity, "identity", "Leaves the image as it is (code 0 rows pad a shorter program).")                    \
  OP(1, Affine, "affine",                                                                                          \
     "torchvision's affine(img, angle, translate, scale=1.0, shear, interpolation, fill) about the image centre "  \
     "(rotate(img, a) with expand=False is affine(angle=-a)).",                                                    \
     real("angle", "degrees, clockwise"), real("translate", "pixels (x, y)").times(2),                             \
     real("shear", "degrees (x, y)").above(-90).below(90).times(2),                                                \
     choice("interpolation", {"nearest", "bilinear"}, "torchvision's InterpolationMode").defaults_to(0),           \
     real("fill",                                                                                                  \
          "the grey level of the pixels from outside the image; None: torchvision's fill=None (zero padding "      \
          "without the fill mask's blend)")                                                                        \
         .within(0, 255)                                                                                           \
         .or_none(kNoFill)                                                                                         \
         .defaults_to(kNoFill))                                                                                    \
  OP(2, AdjustBrightness, "adjust_brightness", "torchvision's adjust_brightness.",                                 \
     real("brightness_factor", "0: black, 1: the image").at_least(0))                                              \
  OP(3, AdjustContrast, "adjust_contrast", "torchvision's adjust_contrast.",                                       \
     real("contrast_factor", "0: the mean grey, 1: the image").at_least(0))                                        \
  OP(4, AdjustSaturation, "adjust_saturation", "torchvision's adjust_saturation.",                                 \
     real("saturation_factor", "0: grey, 1: the image").at_least(0))                                               \
  OP(5, AdjustHue, "adjust_hue", "torchvision's adjust_hue.",                                                      \
     real("hue_factor", "the turn of the hue, in turns").within(-0.5, 0.5))                                        \
  OP(6, AdjustSharpness, "adjust_sharpness", "torchvision's adjust_sharpness.",                                    \
     real("sharpness_factor", "0: smoothed, 1: the image").at_least(0))                                            \
  OP(7, Posterize, "posterize", "torchvision's posterize.", integer("bits", 0, 8, "the high bits kept"))           \
  OP(8, Solarize, "solarize", "torchvision's solarize: a value >= threshold is inverted.",                         \
     real("threshold", "on 0..255").at_most(255))                                                                  \
  OP(9, Autocontrast, "autocontrast", "torchvision's autocontrast (per channel).")                                 \
  OP(10, Equalize, "equalize", "torchvision's equalize (per channel).")                                            \
  OP(11, Invert, "invert", "torchvision's invert.")                                                                \
  OP(12, RgbToGrayscale, "rgb_to_grayscale", "torchvision's rgb_to_grayscale(num_output_channels=3).")             \
  OP(13, GaussianBlur, "gaussian_blur",                                                                            \
     "torchvision's gaussian_blur (reflect padding, folded again where it reaches past a small image, where "      \
     "torch's reflect padding raises).",                                                                           \
     integer("kernel_size", 1, 1001, "pixels (x, y)").odd_only().times(2),                                         \
     real("sigma", "pixels (x, y)").above(0).times(2))                                                             \
  OP(14, Fill, "fill",                                                                                             \
     "Sets the fill colour of the sample's following pil_affine rows (black at the start of each program, "        \
     "Pillow's default).",                                                                                         \
     integer("color", 0, 255, "R, G, B").times(3))                                                                 \
  OP(15, PilAffine, "pil_affine",                                                                                  \
     "Pillow's img.transform(img.size, Image.AFFINE, data, resample, fillcolor=the fill colour): output pixel "    \
     "(x, y) samples the input at (a x' + b y' + c, d x' + e y' + f), x' = x + 0.5, y' = y + 0.5.",                \
     real("data",                                                                                                  \
          "Pillow's AFFINE data (a, b, c, d, e, f), each plus the parts of the pil_affine_low rows before it "     \
          "(in double)")                                                                                           \
         .times(6),                                                                                                \
     choice("resample", {"NEAREST", "BILINEAR", "BICUBIC"}, "Pillow's filter"))                                    \
  OP(16, SolarizeAdd, "solarize_add", "timm's solarize_add: a value v below threshold becomes min(255, v + add).", \
     integer("add", 0, 255, "added to the values below the threshold"),                                            \
     real("threshold", "on 0..255 (256: every value)").within(0, 256))                                             \
  OP(17, MixBegin, "mix_begin",                                                                                    \
     "Begins AugMix's mix: the image becomes the chains' source, the float32 sum = weight * image.",               \
     real("weight", "the original image's weight").at_least(0))                                                    \
  OP(18, MixAdd, "mix_add", "Ends a chain: sum += weight * image (float32), then the image is the source again.",  \
     real("weight", "the chain's weight").at_least(0))                                                             \
  OP(19, MixEnd, "mix_end",                                                                                        \
     "Ends the mix: mixed = trunc(clamp(sum, 0, 255)), the image = Pillow's Image.blend(source, mixed, alpha).",   \
     real("alpha", "1: the mix itself (torchvision's AugMix); below 1: timm's AugMixAugment blend")                \
         .within(0, 1)                                                                                             \
         .defaults_to(1))                                                                                          \
  OP(20, PilAffineLow, "pil_affine_low",                                                                           \
     "Adds parts of the AFFINE data of the sample's next pil_affine row, in double (cleared there): Pillow's "     \
     "double coefficients travel exactly as float32 parts hi (the pil_affine row) + mid + lo (a row each).",       \
     real("data", "parts of (a, b, c, d, e, f)").times(6))                                                         \
  OP(21, PilEnhance, "pil_enhance", "Pillow's ImageEnhance.<enhancer>(img).enhance(factor).",                      \
     choice("enhancer", {"Brightness", "Color", "Contrast", "Sharpness"}, "ImageEnhance's class"),                 \
     real("factor", "0: the enhancer's degenerate image, 1: the image").at_least(0))                               \
  OP(22, PilHue, "pil_hue",                                                                                        \
     "torchvision's adjust_hue of a PIL image: convert(\"HSV\"), H += shift modulo 256, convert(\"RGB\").",        \
     integer("shift", 0, 255, "int(hue_factor * 255) modulo 256"))                                                 \
  OP(23, PilAutocontrast, "pil_autocontrast", "Pillow's ImageOps.autocontrast(img) (per channel).")

enum class Code : int {
#define SPDL_TORCH_AUGMENT_ENUM(code, Name, ...) Name = code,
  SPDL_TORCH_AUGMENT_OPS(SPDL_TORCH_AUGMENT_ENUM)
#undef SPDL_TORCH_AUGMENT_ENUM
};

inline constexpr OpSpec kOps[] = {
#define SPDL_TORCH_AUGMENT_SPEC(code, Name, name, doc, ...) OpSpec(code, name, doc, {__VA_ARGS__}),
    SPDL_TORCH_AUGMENT_OPS(SPDL_TORCH_AUGMENT_SPEC)
#undef SPDL_TORCH_AUGMENT_SPEC
};
constexpr int kNumOps = int(sizeof(kOps) / sizeof(kOps[0]));
constexpr int kMaxCode = kNumOps - 1;

constexpr const OpSpec& op_spec(Code code) { return kOps[int(code)]; }

// The erase rows of decode_images(erase=...), written into the finished slot after the normalisation.
inline constexpr Arg kEraseArgs[] = {
    choice("mode", {"off", "value", "random"},
           "off: nothing (the padding of a sample's shorter list of boxes; the other columns are not read); value: "
           "`value` per channel; random: normal(0, 1) values drawn from the sample's seed (RandomErasing's "
           "value=\"random\"; each box of a sample from its own stream)"),
    integer("top", 0, 1 << 24, "the box's first row"),
    integer("left", 0, 1 << 24, "the box's first column"),
    integer("height", 0, 1 << 24, "rows (the box is clipped to the slot, as a slice is)"),
    integer("width", 0, 1 << 24, "columns"),
    real("value",
         "per channel (a 1-channel slot: the first), in the slot's values: float32 as is, bfloat16 rounded to nearest "
         "even, uint8 truncated after a clamp to [0, 255]")
        .not_nan()
        .times(3)
        .defaults_to(0),
};
constexpr int kNumEraseArgs = int(sizeof(kEraseArgs) / sizeof(kEraseArgs[0]));

constexpr bool same_name(const char* a, const char* b) {
  while (*a != 0 && *a == *b) ++a, ++b;
  return *a == *b;
}

// The index of `value` among the choices of argument `arg` (-1: none of that name).
constexpr int choice_index(const Arg* args, int num_args, const char* arg, const char* value) {
  for (int k = 0; k < num_args; ++k) {
    if (!same_name(args[k].name, arg)) continue;
    for (int c = 0; c < args[k].num_choices(); ++c) {
      if (same_name(args[k].choices[c], value)) return c;
    }
  }
  return -1;
}
constexpr int choice_index(Code code, const char* arg, const char* value) {
  return choice_index(op_spec(code).args, op_spec(code).num_args, arg, value);
}

enum class EraseMode : int {
  Off = choice_index(kEraseArgs, kNumEraseArgs, "mode", "off"),
  Value = choice_index(kEraseArgs, kNumEraseArgs, "mode", "value"),
  Random = choice_index(kEraseArgs, kNumEraseArgs, "mode", "random"),
};

namespace table_checks {

constexpr bool args_are_valid(const Arg* args, int num_args, int columns) {
  int used = 0;
  for (int k = 0; k < num_args; ++k) {
    const Arg& a = args[k];
    if (a.name == nullptr || a.count < 1 || !(a.low <= a.high)) return false;
    if (a.kind == ArgKind::Choice && a.num_choices() < 2) return false;
    for (int j = 0; j < k; ++j) {
      if (same_name(args[j].name, a.name)) return false;
    }
    used += a.count;
  }
  return used <= columns;
}

constexpr bool ops_are_valid() {
  for (int i = 0; i < kNumOps; ++i) {
    if (kOps[i].code != i || !args_are_valid(kOps[i].args, kOps[i].num_args, kMaxArgs)) return false;
    for (int j = 0; j < i; ++j) {
      if (same_name(kOps[j].name, kOps[i].name)) return false;
    }
  }
  return true;
}

static_assert(ops_are_valid(), "SPDL_TORCH_AUGMENT_OPS: codes 0.. in order, unique names, at most 7 columns");
static_assert(args_are_valid(kEraseArgs, kNumEraseArgs, kEraseColumns), "kEraseArgs: at most 8 columns");
static_assert(EraseMode::Off == EraseMode(0) && int(EraseMode::Random) > 0, "the erase modes' names");

}  // namespace table_checks

}  // namespace spdl_torch::core::augment
