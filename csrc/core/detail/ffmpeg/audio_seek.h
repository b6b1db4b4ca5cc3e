// SPDX-License-Identifier: BSD-3-Clause
// Which inputs reach a late window by seeking, how, and with how much pre-roll (decoding before the window so
// that its samples are the whole decode's). Internal header.
//
//   input                           how                                       pre-roll
//   PCM WAV (FFmpeg's reader)       timestamp (byte arithmetic), at packets    none
//   FLAC                            a byte seek to a frame found by            none
//                                   interpolation (detail/parse/flac_frames.h);
//                                   else FFmpeg's timestamp seek
//   ALAC in MP4 / M4A               timestamp (the sample tables: exact)      none
//   AAC-LC in MP4 / M4A             timestamp, seek_mode approximate only     2 frames (the overlap; exact
//                                                                             unless the stream uses PNS)
//   MP3                             packet index (audio_index.h)              >= 3 frames and 2 KiB (overlap,
//                                                                             bit reservoir)
//   Vorbis in Ogg (one chain)       packet index                              2 packets (the previous block)
//   Opus in Ogg (one chain)         packet index, seek_mode approximate only  1 s (RFC 7845: >= 80 ms; not
//                                                                             bit-exact: see audio_seek.cpp)
//   anything else                   no seek: the input before the window is decoded
#pragma once

#include <cstdint>
#include <string>

#include "core/audio_types.h"
#include "core/detail/ffmpeg/demux.h"

namespace spdl_torch::core::detail {

enum class SeekMethod { None, Timestamp, PacketIndex, FlacFrames };

struct SeekPolicy {
  SeekMethod method = SeekMethod::None;
  int64_t preroll_samples = 0;  // decode at least this many input samples before the window
  int64_t preroll_packets = 0;  // and at least this many packets (PacketIndex)
  int64_t preroll_bytes = 0;    // and at least this many bytes of them (PacketIndex: MP3's bit reservoir)
  // Timestamp: seek to a multiple of the first packet's length, so that packets keep the boundaries of a read
  // from the start (a WAV's packets are fixed-size reads).
  bool packet_aligned = false;
};

// `frame_rate`: the sample rate of the stream's first decoded frame. Ogg inputs of several chains (each
// restarting its timestamps) are left out by the packet index (audio_index.h), not here.
SeekPolicy audio_seek_policy(const Demuxer& demuxer, int stream, AudioSeekMode mode, int frame_rate);

}  // namespace spdl_torch::core::detail
