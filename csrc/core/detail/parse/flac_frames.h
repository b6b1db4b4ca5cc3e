// SPDX-License-Identifier: BSD-3-Clause
// FLAC frames found in the bytes (RFC 9639): the STREAMINFO block, frame headers (CRC-8 checked and consistent
// with STREAMINFO), and the search for the frame before a sample by interpolation over the file, which lets a
// FLAC window be reached by a byte seek to an exact frame (FFmpeg's own FLAC seek bisects with its parser,
// several times slower on long files). Bounds-checked, no library. Internal header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/detail/io/byte_reader.h"

namespace spdl_torch::core::detail {

struct FlacStreamInfo {
  int min_block = 0, max_block = 0;  // samples
  int sample_rate = 0, channels = 0, bits = 0;
  int64_t total_samples = 0;  // 0: unknown
};

// The 34-byte STREAMINFO block (FFmpeg's FLAC extradata). False when malformed.
bool parse_flac_streaminfo(const uint8_t* p, size_t n, FlacStreamInfo* info);

struct FlacFrame {
  int64_t first_sample = 0;  // the stream's sample number of the frame's first sample
  int block_size = 0;
};

// The frame header at p[0], when it is one of this stream (sync, reserved bits, CRC-8, rate, channels and depth
// as STREAMINFO states them, a block size within its maximum). Fixed-blocksize streams need min_block ==
// max_block (a frame's number then times it is its first sample).
bool parse_flac_frame_header(const uint8_t* p, size_t n, const FlacStreamInfo& info, FlacFrame* frame);

// The byte offset of the first frame: past "fLaC" and the metadata blocks; -1 when they do not parse.
int64_t flac_audio_offset(ByteReader& input);

// Finds a frame whose first sample is at or before `target` and at most a few frames before it, from `start`
// (the first frame's offset) on: *pos its byte offset, *first its first sample. A header is taken when the next
// one follows it where its block size says (or the buffer ends first). False when no such frame is found.
bool locate_flac_frame(ByteReader& input, const FlacStreamInfo& info, int64_t start, int64_t target, int64_t* pos,
                       int64_t* first);

}  // namespace spdl_torch::core::detail
