// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/video_convert.h"

extern "C" {
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
}

#include <cmath>
#include <cstring>
#include <new>
#include <string>

#include "core/errors.h"

namespace spdl_torch::core::detail {

int display_rotation(const AVStream* stream) {
  const uint8_t* matrix = nullptr;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 29, 100)
  const AVPacketSideData* sd = av_packet_side_data_get(stream->codecpar->coded_side_data,
                                                       stream->codecpar->nb_coded_side_data,
                                                       AV_PKT_DATA_DISPLAYMATRIX);
  if (sd != nullptr && sd->size >= 9 * sizeof(int32_t)) matrix = sd->data;
#else
  size_t size = 0;
  matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (size < 9 * sizeof(int32_t)) matrix = nullptr;
#endif
  if (matrix == nullptr) return 0;
  // As the CLI: theta = -rotation, normalised to [0, 360); then the nearest of 90, 180, 270 within 1 degree.
  double theta = -std::round(av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix)));
  if (std::isnan(theta)) return 0;
  theta -= 360 * std::floor(theta / 360 + 0.9 / 360);
  if (std::fabs(theta - 90) < 1.0) return 90;
  if (std::fabs(theta - 180) < 1.0) return 180;
  if (std::fabs(theta - 270) < 1.0) return 270;
  return 0;
}

int64_t rgb_row_bytes(int64_t width) { return (width * 3 + 63) / 64 * 64; }
int64_t rgb_buffer_bytes(int64_t width, int64_t height) { return rgb_row_bytes(width) * height + 64; }

namespace {

// The colour coefficients the CLI's scale filter picks for a frame (its in_color_matrix "auto"): the
// frame's colour space when libswscale knows it, else BT.601.
const int* frame_coefficients(int colorspace) {
  if (colorspace < 1 || colorspace > 10 || colorspace == 8) colorspace = AVCOL_SPC_BT470BG;
  return sws_getCoefficients(colorspace);
}

}  // namespace

void RgbConverter::convert(const AVFrame* frame, uint8_t* dst, int64_t row_bytes) {
  if (!ctx_ || frame->width != width_ || frame->height != height_ || frame->format != format_ ||
      frame->colorspace != colorspace_ || frame->color_range != range_) {
    ctx_.reset(sws_getContext(frame->width, frame->height, AVPixelFormat(frame->format), frame->width,
                              frame->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr, nullptr, nullptr));
    if (!ctx_) {
      const char* name = av_get_pix_fmt_name(AVPixelFormat(frame->format));
      throw DecodeError(std::string("cannot convert ") + (name ? name : "an unknown pixel format") + " frames of " +
                        std::to_string(frame->width) + "x" + std::to_string(frame->height) + " to RGB");
    }
    int* inv_table = nullptr;
    int* table = nullptr;
    int src_full = 0, dst_full = 0, brightness = 0, contrast = 0, saturation = 0;
    if (sws_getColorspaceDetails(ctx_.get(), &inv_table, &src_full, &table, &dst_full, &brightness, &contrast,
                                 &saturation) >= 0) {
      const int* coefficients = frame_coefficients(frame->colorspace);
      if (frame->color_range != AVCOL_RANGE_UNSPECIFIED) src_full = frame->color_range == AVCOL_RANGE_JPEG;
      sws_setColorspaceDetails(ctx_.get(), coefficients, src_full, coefficients, dst_full, brightness, contrast,
                               saturation);
    }
    width_ = frame->width;
    height_ = frame->height;
    format_ = frame->format;
    colorspace_ = frame->colorspace;
    range_ = frame->color_range;
  }
  uint8_t* planes[4] = {dst, nullptr, nullptr, nullptr};
  int strides[4] = {int(row_bytes), 0, 0, 0};
  const int rows = sws_scale(ctx_.get(), frame->data, frame->linesize, 0, frame->height, planes, strides);
  if (rows != frame->height) {
    throw DecodeError("libswscale converted " + std::to_string(rows) + " of " + std::to_string(frame->height) +
                      " rows to RGB");
  }
}

void rotate_rgb(const uint8_t* src, int64_t h, int64_t w, int64_t src_row_bytes, int degrees, uint8_t* dst) {
  const int64_t out_w = degrees == 180 ? w : h;
  for (int64_t r = 0; r < (degrees == 180 ? h : w); ++r) {
    uint8_t* out = dst + r * out_w * 3;
    for (int64_t c = 0; c < out_w; ++c) {
      int64_t sr, sc;
      if (degrees == 90) {  // clockwise: out(r, c) = in(h - 1 - c, r)
        sr = h - 1 - c;
        sc = r;
      } else if (degrees == 270) {  // counter-clockwise: out(r, c) = in(c, w - 1 - r)
        sr = c;
        sc = w - 1 - r;
      } else {
        sr = h - 1 - r;
        sc = w - 1 - c;
      }
      std::memcpy(out + c * 3, src + sr * src_row_bytes + sc * 3, 3);
    }
  }
}

}  // namespace spdl_torch::core::detail
