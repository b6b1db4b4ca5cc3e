// SPDX-License-Identifier: BSD-3-Clause
// One libjpeg decompression session: the error manager (longjmp out of libjpeg, the message kept), the
// policy that turns data-losing warnings into errors, the owned decompressor, and the whole-stream
// validation. Used by the TurboJPEG decoder (validation, the warning policy) and the region decoder.
// STYLE: setjmp only in small helpers without non-trivial locals; never throw through libjpeg's frames.
#pragma once

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include <jpeglib.h>

namespace spdl_torch::core::detail {

// libjpeg's error manager extended with the jump target and the message of the failure.
struct LibjpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// The status a setjmp helper returns. kWholeImage: the stream is one the partial decode cannot vouch for;
// the caller decodes the whole image instead.
enum LibjpegStatus { kOk = 0, kLibjpegError = 1, kUnexpected = 2, kWholeImage = 3 };

// A libjpeg decompressor with its error manager, owned; one per stream, never reused (a decompression
// object keeps the tables of earlier streams and uses them for a stream that lacks its own).
// Throws DecodeError when it cannot be created.
class LibjpegDecompressor {
 public:
  LibjpegDecompressor();
  ~LibjpegDecompressor();
  LibjpegDecompressor(const LibjpegDecompressor&) = delete;
  LibjpegDecompressor& operator=(const LibjpegDecompressor&) = delete;

  jpeg_decompress_struct* cinfo() { return &cinfo_; }
  LibjpegErrorManager* err() { return &err_; }
  const char* message() const { return err_.message; }

 private:
  jpeg_decompress_struct cinfo_{};
  LibjpegErrorManager err_{};
};

// Whether the text of a libjpeg warning (as TurboJPEG reports it) means pixel data was lost: the same
// warnings the session's error manager turns into errors.
bool libjpeg_warning_loses_data(const char* message);

// Reads the whole stream with libjpeg's API (every scan entropy-decoded, pixels at DCT scale 1/8, then
// jpeg_finish_decompress) and throws DecodeError("JPEG: ...") for any error or data-losing warning
// (premature end, bad Huffman/arithmetic code, missing restart marker, corrupt data before a marker is
// only a warning). For streams on which TurboJPEG reported a warning: TurboJPEG 2.1 reports only its last
// message, and reports a fatal error that follows any warning as a warning (tjGetErrorCode), so it
// cannot tell "one harmless warning" from "a warning, then no pixels written".
void validate_jpeg_stream(const uint8_t* data, size_t size);

}  // namespace spdl_torch::core::detail
