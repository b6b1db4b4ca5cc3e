// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/jpeg/libjpeg_session.h"

#include <cstring>
#include <string>
#include <vector>

// After jpeglib.h: its jconfig.h decides which messages (arithmetic coding) jerror.h declares.
#include <jerror.h>

#include "core/errors.h"

namespace spdl_torch::core::detail {
namespace {

extern "C" void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<LibjpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (msg_level -1) that mean pixel data was lost -- libjpeg filled it with grey or garbage -- end
// the decode as errors; other warnings and trace messages are ignored.
extern "C" void on_emit_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level != -1) return;
  const int code = cinfo->err->msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_HUFF_BAD_CODE ||
      code == JWRN_ARITH_BAD_CODE || code == JWRN_MUST_RESYNC) {
    on_error_exit(cinfo);
  }
  cinfo->err->num_warnings++;
}

// setjmp helper: creates the decompressor.
int create_helper(jpeg_decompress_struct* cinfo, LibjpegErrorManager* err) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = on_error_exit;
  err->pub.emit_message = on_emit_message;
  if (setjmp(err->jump)) return kLibjpegError;
  jpeg_create_decompress(cinfo);
  return kOk;
}

// setjmp helper: reads every scanline at DCT scale 1/8 into `row` (capacity bytes, one row) and finishes.
int validate_helper(jpeg_decompress_struct* cinfo, LibjpegErrorManager* err, const uint8_t* data, size_t size,
                    uint8_t* row, size_t capacity) {
  if (setjmp(err->jump)) {
    jpeg_abort_decompress(cinfo);
    return kLibjpegError;
  }
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  if (jpeg_read_header(cinfo, TRUE) != JPEG_HEADER_OK) {
    jpeg_abort_decompress(cinfo);
    return kUnexpected;
  }
  cinfo->scale_num = 1;
  cinfo->scale_denom = 8;
  jpeg_start_decompress(cinfo);
  if (size_t(cinfo->output_width) * size_t(cinfo->output_components) > capacity) {
    jpeg_abort_decompress(cinfo);
    return kUnexpected;
  }
  JSAMPROW rows[1] = {row};
  while (cinfo->output_scanline < cinfo->output_height) {
    if (jpeg_read_scanlines(cinfo, rows, 1) != 1) {
      jpeg_abort_decompress(cinfo);
      return kUnexpected;
    }
  }
  jpeg_finish_decompress(cinfo);
  return kOk;
}

}  // namespace

LibjpegDecompressor::LibjpegDecompressor() {
  if (create_helper(&cinfo_, &err_) != kOk) {
    throw DecodeError(std::string("JPEG: cannot create a decompressor: ") + err_.message);
  }
}

LibjpegDecompressor::~LibjpegDecompressor() { jpeg_destroy_decompress(&cinfo_); }

bool libjpeg_warning_loses_data(const char* message) {
  static const char* const kLossy[] = {"Premature end", "premature end", "bad Huffman code", "bad arithmetic code",
                                       "instead of RST"};
  for (const char* s : kLossy) {
    if (std::strstr(message, s)) return true;
  }
  return false;
}

void validate_jpeg_stream(const uint8_t* data, size_t size) {
  // One row at scale 1/8 of the widest JPEG (65535 pixels) with at most 4 components.
  std::vector<uint8_t> row((65535 + 7) / 8 * 4);
  LibjpegDecompressor d;
  const int status = validate_helper(d.cinfo(), d.err(), data, size, row.data(), row.size());
  if (status == kOk) return;
  throw DecodeError(status == kLibjpegError ? std::string("JPEG: ") + d.message()
                                            : std::string("JPEG: the stream disagrees with its frame header"));
}

}  // namespace spdl_torch::core::detail
