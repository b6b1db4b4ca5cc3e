// SPDX-License-Identifier: BSD-3-Clause
#include "core/batch_options.h"

#include <sstream>

#include "core/errors.h"

namespace spdl_torch::core {
namespace {

// Formats the pieces as an ostream does (the messages torch's TORCH_CHECK gave before the checks moved here).
template <typename... Ts>
std::string str(const Ts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

std::string list(const std::vector<double>& v) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
  return out.str();
}

bool valid_range(const std::vector<double>& v) { return v.size() == 2 && 0 < v[0] && v[0] <= v[1]; }

double channel_value(const std::vector<double>& v, int c, double fill) {
  if (v.empty()) return fill;
  return v.size() == 1 ? v[0] : v[size_t(c)];
}

}  // namespace

GeometryMode parse_geometry_mode(const std::string& name) {
  if (name == "eval") return GeometryMode::Eval;
  if (name == "resize") return GeometryMode::Resize;
  if (name == "train") return GeometryMode::Train;
  if (name == "random_crop") return GeometryMode::RandomCrop;
  throw InvalidArgument("expected geometry mode to be one of \"eval\", \"resize\", \"train\", \"random_crop\", got \"" +
                        name + "\"");
}

ResampleFilter parse_resample_filter(const std::string& name) {
  if (name == "bilinear") return ResampleFilter::Bilinear;
  if (name == "bicubic") return ResampleFilter::Bicubic;
  if (name == "nearest") return ResampleFilter::Nearest;
  if (name == "nearest_exact") return ResampleFilter::NearestExact;
  throw InvalidArgument("expected interpolation \"bilinear\", \"bicubic\", \"nearest\" or \"nearest_exact\", got \"" +
                        name + "\"");
}

GrayRule parse_color(const std::string& name) {
  if (name == "rgb") return GrayRule::None;
  if (name == "gray") return GrayRule::Torchvision;
  if (name == "gray_pil") return GrayRule::Pillow;
  throw InvalidArgument("expected color \"rgb\", \"gray\" or \"gray_pil\", got \"" + name + "\"");
}

void BatchOptions::validate() const {
  if (height <= 0 || width <= 0) throw InvalidArgument(str("expected height and width >= 1, got ", height, "x", width));
  if (height > 65536 || width > 65536) {
    throw InvalidArgument(str("expected height and width <= 65536, got ", height, "x", width));
  }
  if (resize_shorter < 0) throw InvalidArgument(str("expected resize_shorter >= 0 (0: no resize), got ", resize_shorter));
  if (!valid_range(scale)) throw InvalidArgument("expected scale = [lo, hi] with 0 < lo <= hi, got " + list(scale));
  if (!valid_range(ratio)) throw InvalidArgument("expected ratio = [lo, hi] with 0 < lo <= hi, got " + list(ratio));
  if (!(0.0 <= hflip_prob && hflip_prob <= 1.0)) throw InvalidArgument(str("expected 0 <= hflip_prob <= 1, got ", hflip_prob));
  if (!(0.0 <= vflip_prob && vflip_prob <= 1.0)) throw InvalidArgument(str("expected 0 <= vflip_prob <= 1, got ", vflip_prob));
  if (max_size < 0) throw InvalidArgument(str("expected max_size >= 0 (0: none), got ", max_size));
  if (max_size > 0 && max_size <= resize_shorter) {
    throw InvalidArgument(str("expected max_size > resize_shorter (torchvision's rule), got max_size ", max_size,
                              " and resize_shorter ", resize_shorter));
  }
  if (!padding.empty() && padding.size() != 4) {
    throw InvalidArgument(str("expected padding with 4 values [left, top, right, bottom], got ", padding.size()));
  }
  for (int64_t p : padding) {
    if (p < 0 || p > 65536) throw InvalidArgument(str("expected padding values in 0..65536, got ", p));
  }
  if ((!padding.empty() || pad_if_needed) && geometry != GeometryMode::RandomCrop) {
    throw InvalidArgument("padding and pad_if_needed need geometry random_crop");
  }
  if (num_output_channels != 1 && num_output_channels != 3) {
    throw InvalidArgument(str("expected num_output_channels 1 or 3, got ", num_output_channels));
  }
  if (num_output_channels == 1 && gray == GrayRule::None) {
    throw InvalidArgument("num_output_channels=1 needs a grey color (\"gray\" or \"gray_pil\")");
  }
  if (out_type == OutType::UInt8 && normalize()) {
    throw InvalidArgument("mean/std normalization needs dtype float32 or bfloat16, got uint8");
  }
  if (!(dct_min_ratio >= 0)) {
    throw InvalidArgument(str("expected dct_min_ratio >= 0 (0: no DCT scaling), got ", dct_min_ratio));
  }
  for (const auto* v : {&mean, &std}) {
    if (!v->empty() && v->size() != 1 && v->size() != 3) {
      throw InvalidArgument(str("expected ", v == &mean ? "mean" : "std", " with 1 or 3 values (one per RGB channel), got ",
                                v->size()));
    }
  }
  if (num_output_channels == 1 && (mean.size() > 1 || std.size() > 1)) {
    throw InvalidArgument(str("expected 1 mean and std value for 1 output channel, got ", mean.size(), " and ",
                              std.size()));
  }
  for (int c = 0; c < 3; ++c) {
    if (channel_value(std, c, 1.0) == 0.0) {
      throw InvalidArgument(str("expected std values != 0, got ", channel_value(std, c, 1.0), " for channel ", c));
    }
  }
}

float BatchOptions::channel_mean(int c) const { return float(channel_value(mean, c, 0.0)); }
float BatchOptions::channel_std(int c) const { return float(channel_value(std, c, 1.0)); }

}  // namespace spdl_torch::core
