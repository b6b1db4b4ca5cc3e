// SPDX-License-Identifier: BSD-3-Clause
// Types shared by the image decoders: colour modes, output shapes and the caller-provided output buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace spdl_torch::core {

// Output colour modes, named as torchvision.io.ImageReadMode.
enum class ColorMode {
  RGB,        // 3 channels, 8-bit; alpha dropped, grey replicated
  RGBA,       // 4 channels, 8-bit; opaque (255) alpha added where the image has none
  GRAY,        // 1 channel, 8-bit; colour reduced with ITU-R 601-2 luma (Pillow's "L")
  GRAY_ALPHA,  // 2 channels, 8-bit: GRAY's luma and the alpha (maximum where the image has none; Pillow's "LA")
  UNCHANGED,   // the file's own channels (1, 2, 3 or 4) and, with BitDepth::Source, depth (8 or 16 bit)
};

ColorMode parse_color_mode(const std::string& mode);  // throws InvalidArgument
const char* color_mode_name(ColorMode mode);

enum class ElemType { UInt8, UInt16 };

// Sample depth of the output. Source: 8 bit, except UNCHANGED keeps a 16-bit file's 16 bits (the output
// type then depends on the data). Eight / Sixteen: that depth in every mode, whatever the file's depth:
// 16 -> 8 bit keeps the high byte, 8 -> 16 bit replicates it (v * 257, so 255 -> 65535).
enum class BitDepth { Source, Eight, Sixteen };

inline int elem_size(ElemType t) { return t == ElemType::UInt8 ? 1 : 2; }

// Shape of a decoded image stored interleaved: height x width x channels (HWC), rows contiguous.
struct ImageShape {
  int height = 0;
  int width = 0;
  int channels = 0;
  ElemType type = ElemType::UInt8;

  int64_t row_bytes() const { return int64_t(width) * channels * elem_size(type); }
  int64_t num_bytes() const { return row_bytes() * height; }
};

// Called once the output shape is known; returns memory for shape.num_bytes() bytes laid out HWC.
// The caller owns the memory (the torch binding allocates a tensor here).
using OutputAllocator = std::function<uint8_t*(const ImageShape&)>;

// Default decoded-pixel limit (spdl_torch.io.limits.image_pixels at import): where Pillow raises
// DecompressionBombError, twice its Image.MAX_IMAGE_PIXELS (1024 * 1024 * 1024 // 4 // 3).
constexpr int64_t kDefaultMaxPixels = 178956970;

struct DecodeOptions {
  ColorMode mode = ColorMode::RGB;
  bool apply_exif_orientation = true;
  int64_t max_pixels = kDefaultMaxPixels;  // width * height above this is a DecodeError; <= 0: no limit
  BitDepth depth = BitDepth::Source;
};

}  // namespace spdl_torch::core
