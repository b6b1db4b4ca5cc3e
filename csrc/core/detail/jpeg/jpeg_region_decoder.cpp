// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/jpeg/jpeg_region_decoder.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/detail/jpeg/libjpeg_session.h"
#include "core/errors.h"

namespace spdl_torch::core {
namespace {

using namespace detail;  // the libjpeg session

// Everything the setjmp helper reads and writes: plain data, no destructors.
struct RegionJob {
  const uint8_t* data;
  size_t size;
  unsigned int scale_num, scale_denom;
  JDIMENSION want_top, want_bottom, want_left, want_right;
  JDIMENSION expect_width, expect_height;
  uint8_t* dst;
  size_t capacity;
  // results
  JDIMENSION top, left, width;
};

// Output rows per iMCU row: what libjpeg decodes at a time.
JDIMENSION imcu_rows(const jpeg_decompress_struct* cinfo) {
#if JPEG_LIB_VERSION >= 70
  return JDIMENSION(cinfo->max_v_samp_factor * cinfo->min_DCT_v_scaled_size);
#else
  return JDIMENSION(cinfo->max_v_samp_factor * cinfo->min_DCT_scaled_size);
#endif
}

// The output row up to which a single-scan stream with restart markers must be decoded so that the
// restart marker ending the interval of the last MCU decoded so far is checked: a damaged interval
// (bytes lost or inserted inside the region) decodes without complaint and is caught only there ("found
// marker 0xd4 instead of RST3"). 0: no restart markers, or the stream holds every scan in memory
// (progressive, multi-scan: jpeg_start_decompress has read them all already).
JDIMENSION restart_check_row(const jpeg_decompress_struct* cinfo) {
  if (cinfo->restart_interval == 0 || jpeg_has_multiple_scans(const_cast<jpeg_decompress_struct*>(cinfo))) return 0;
  const long mcus_per_imcu_row =
      long(cinfo->MCUs_per_row) * (cinfo->comps_in_scan == 1 ? cinfo->cur_comp_info[0]->v_samp_factor : 1);
  const long decoded = long(cinfo->input_iMCU_row) * mcus_per_imcu_row;
  const long interval = long(cinfo->restart_interval);
  const long next_restart = (decoded + interval - 1) / interval * interval;  // the MCU that reads the marker
  return JDIMENSION(next_restart / mcus_per_imcu_row + 1) * imcu_rows(cinfo);
}

// setjmp helper: decodes job->want rows (plus a margin above) and columns (plus a margin, iMCU-aligned).
int decode_region_helper(jpeg_decompress_struct* cinfo, LibjpegErrorManager* err, RegionJob* job) {
  if (setjmp(err->jump)) {
    jpeg_abort_decompress(cinfo);
    return kLibjpegError;
  }
  jpeg_mem_src(cinfo, job->data, static_cast<unsigned long>(job->size));
  if (jpeg_read_header(cinfo, TRUE) != JPEG_HEADER_OK || cinfo->num_components == 4) {
    jpeg_abort_decompress(cinfo);
    return kUnexpected;
  }
  if (cinfo->arith_code) {
    // libjpeg's arithmetic decoder fills zeros without a warning when it meets a marker inside the data
    // (an inserted or damaged byte pair), so a damaged region decoded "fine"; only reading on to the end
    // finds the damage. Arithmetic-coded JPEGs are rare: decode them whole.
    jpeg_abort_decompress(cinfo);
    return kWholeImage;
  }
  cinfo->scale_num = job->scale_num;
  cinfo->scale_denom = job->scale_denom;
  cinfo->out_color_space = JCS_RGB;
  cinfo->dct_method = JDCT_ISLOW;
  cinfo->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(cinfo);
  if (cinfo->output_width != job->expect_width || cinfo->output_height != job->expect_height ||
      cinfo->output_components != 3 || job->want_bottom > cinfo->output_height ||
      job->want_right > cinfo->output_width || job->want_top >= job->want_bottom ||
      job->want_left >= job->want_right) {
    jpeg_abort_decompress(cinfo);
    return kUnexpected;
  }
  // A margin of max_samp_factor output pixels on each side. Fancy upsampling replicates the edge chroma
  // sample of the decoded columns/rows: a chroma sample covers max_samp_factor / comp_samp_factor <=
  // max_samp_factor output pixels (libjpeg-turbo's IDCT scaling of chroma only makes that smaller), and
  // the triangle filter reads one sample beyond, so only pixels within that distance of the decoded edge
  // can differ from a whole-image decode.
  const JDIMENSION hmargin = JDIMENSION(cinfo->max_h_samp_factor);
  const JDIMENSION vmargin = JDIMENSION(cinfo->max_v_samp_factor);
  JDIMENSION left = job->want_left > hmargin ? job->want_left - hmargin : 0;
  const JDIMENSION right =
      job->want_right + hmargin < cinfo->output_width ? job->want_right + hmargin : cinfo->output_width;
  JDIMENSION width = right - left;
  // Columns are cut only where that is bit-exact against the whole-image decode: baseline JPEGs with
  // sampling factors <= 2 (4:4:4, 4:2:2, 4:2:0, 4:4:0, grey) -- nearly all photos. Progressive JPEGs with
  // missing coefficient bits get libjpeg-turbo 2.1's block smoothing, which reads DC values two blocks away,
  // across a cropped edge too, and 4x sampling factors differ as well: those keep every column; their rows
  // are still cut. The rule is checked by the differential fuzz target fuzz_decode_batch (partial == whole
  // decode) and tests/io/test_batch_partial_decode.py.
  const bool crop_columns = !cinfo->progressive_mode && cinfo->max_h_samp_factor <= 2 && cinfo->max_v_samp_factor <= 2;
  if (width < cinfo->output_width && crop_columns) {
    jpeg_crop_scanline(cinfo, &left, &width);  // aligns left down to an iMCU boundary, widens
  } else {
    left = 0;
  }
  const JDIMENSION top = job->want_top > vmargin ? job->want_top - vmargin : 0;
  const size_t row_bytes = size_t(cinfo->output_width) * 3;  // output_width == width after cropping
  if (left > job->want_left || left + cinfo->output_width < job->want_right ||
      size_t(job->want_bottom - top) * row_bytes > job->capacity) {
    jpeg_abort_decompress(cinfo);
    return kUnexpected;
  }
  if (top > 0 && jpeg_skip_scanlines(cinfo, top) != top) {
    jpeg_abort_decompress(cinfo);
    return kUnexpected;
  }
  JSAMPROW rows[16];
  while (cinfo->output_scanline < job->want_bottom) {
    const JDIMENSION first = cinfo->output_scanline;
    JDIMENSION n = job->want_bottom - first;
    if (n > 16) n = 16;
    for (JDIMENSION i = 0; i < n; ++i) rows[i] = job->dst + size_t(first - top + i) * row_bytes;
    if (jpeg_read_scanlines(cinfo, rows, n) == 0) {  // cannot happen with a memory source
      jpeg_abort_decompress(cinfo);
      return kUnexpected;
    }
  }
  const JDIMENSION check_row = restart_check_row(cinfo);
  if (check_row >= cinfo->output_height) {
    // The check lies in the last rows: jpeg_skip_scanlines to the end would not decode them. Let the
    // whole-image decode read (and check) everything.
    jpeg_abort_decompress(cinfo);
    return kWholeImage;
  }
  if (check_row > cinfo->output_scanline) {
    const JDIMENSION n = check_row - cinfo->output_scanline;
    if (jpeg_skip_scanlines(cinfo, n) != n) {  // entropy-decodes the rows, restart markers included
      jpeg_abort_decompress(cinfo);
      return kUnexpected;
    }
  }
  job->top = top;
  job->left = left;
  job->width = cinfo->output_width;
  // The rows below the region are not needed: stop without decoding (or entropy-decoding) them.
  jpeg_abort_decompress(cinfo);
  return kOk;
}

std::string describe(const JpegRegion& r) {
  return "rows " + std::to_string(r.top) + ".." + std::to_string(r.top + r.height) + ", columns " +
         std::to_string(r.left) + ".." + std::to_string(r.left + r.width);
}

}  // namespace

std::optional<JpegRegion> decode_jpeg_rgb_region(const uint8_t* data, size_t size, const JpegHeader& header,
                                                 JpegScale scale, const JpegRegion& want, std::vector<uint8_t>& dst) {
  if (header.cmyk) throw InternalError("JPEG: CMYK data has no region decode");
  const int64_t full_w = jpeg_scaled_size(header.width, scale);
  const int64_t full_h = jpeg_scaled_size(header.height, scale);
  if (want.top < 0 || want.left < 0 || want.height <= 0 || want.width <= 0 || want.top + want.height > full_h ||
      want.left + want.width > full_w) {
    throw InternalError("decode_jpeg_rgb_region: expected a region inside the " + std::to_string(full_h) + "x" +
                        std::to_string(full_w) + " scaled image, got " + describe(want));
  }
  // Upper bound of the decoded bytes: all columns of the wanted rows and the largest vertical margin
  // (max_v_samp_factor <= 4 rows).
  const int64_t max_rows = std::min<int64_t>(want.top + want.height, want.height + 4);
  const size_t capacity = size_t(max_rows) * size_t(full_w) * 3;
  if (dst.size() < capacity) dst.resize(capacity);

  LibjpegDecompressor d;
  RegionJob job{};
  job.data = data;
  job.size = size;
  job.scale_num = unsigned(scale.num);
  job.scale_denom = unsigned(scale.denom);
  job.want_top = JDIMENSION(want.top);
  job.want_bottom = JDIMENSION(want.top + want.height);
  job.want_left = JDIMENSION(want.left);
  job.want_right = JDIMENSION(want.left + want.width);
  job.expect_width = JDIMENSION(full_w);
  job.expect_height = JDIMENSION(full_h);
  job.dst = dst.data();
  job.capacity = dst.size();
  const int status = decode_region_helper(d.cinfo(), d.err(), &job);
  if (status == kLibjpegError) {
    throw DecodeError(std::string("JPEG: ") + d.message());
  }
  if (status == kWholeImage) return std::nullopt;
  if (status != kOk) {
    throw DecodeError("JPEG: the decoder disagrees with the header about the " + std::to_string(full_h) + "x" +
                      std::to_string(full_w) + " scaled image or the region " + describe(want));
  }
  JpegRegion got;
  got.top = job.top;
  got.left = job.left;
  got.height = want.top + want.height - got.top;
  got.width = job.width;
  return got;
}

}  // namespace spdl_torch::core
