// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/audio_seek.h"

#include <string>

#include "core/detail/ffmpeg/ffmpeg_utils.h"

namespace spdl_torch::core::detail {
namespace {

// RFC 7845 (section 4.6) recommends at least 80 ms of pre-roll. Measured on the media corpus' Opus music and on
// synthetic speech, tones and noise (a sweep of 15 starts per file): 80 ms leaves the window up to 7.8e-2 from
// the whole decode's samples, 200 ms 8.9e-3, 500 ms 9.7e-5, 1 s 8.0e-6 (SILK's state never becomes exact). One
// second costs about 1.5 ms of decoding.
constexpr int64_t kOpusPreroll = 48000;

// The MPEG-4 audio object type of an AudioSpecificConfig (ISO 14496-3 1.6.2.1): 2 is AAC-LC; -1: none.
int aac_object_type(const AVCodecParameters* par) {
  if (par->extradata == nullptr || par->extradata_size < 2) return -1;
  const int type = par->extradata[0] >> 3;
  if (type != 31) return type;
  return 32 + (((par->extradata[0] & 7) << 3) | (par->extradata[1] >> 5));
}

}  // namespace

SeekPolicy audio_seek_policy(const Demuxer& demuxer, int stream, AudioSeekMode mode, int frame_rate) {
  SeekPolicy p;
  const AVCodecParameters* par = demuxer.stream(stream)->codecpar;
  const std::string format = demuxer.format_name();
  const AVCodecID codec = par->codec_id;
  if (format == "wav" && is_pcm_codec(codec)) {
    p.method = SeekMethod::Timestamp;
    p.packet_aligned = true;
  } else if (format == "flac" && codec == AV_CODEC_ID_FLAC) {
    p.method = SeekMethod::FlacFrames;
  } else if (format.rfind("mov,", 0) == 0 && codec == AV_CODEC_ID_ALAC) {
    p.method = SeekMethod::Timestamp;
  } else if (format.rfind("mov,", 0) == 0 && codec == AV_CODEC_ID_AAC && aac_object_type(par) == 2 &&
             frame_rate == par->sample_rate && mode == AudioSeekMode::Approximate) {
    // AAC-LC (not SBR, whose output runs at twice the rate the header states: its state is the decoder's for
    // good). Each output frame overlaps the previous frame's second half; the window shapes are signalled per
    // frame. Only perceptual noise substitution keeps state: FFmpeg's decoder draws its noise from one
    // generator that runs through the whole stream, so in a stream that uses it the noise bands differ.
    p.method = SeekMethod::Timestamp;
    p.preroll_samples = 2 * 1024;
  } else if (format == "mp3" && codec == AV_CODEC_ID_MP3) {
    // A frame's main data starts up to 511 bytes back in earlier frames (the bit reservoir) and its output
    // overlaps the previous granule's: a frame decodes as in the whole decode once the frames before it that
    // hold 2 KiB have been decoded.
    p.method = SeekMethod::PacketIndex;
    p.preroll_packets = 3;
    p.preroll_bytes = 2048;
  } else if (format == "ogg" && codec == AV_CODEC_ID_VORBIS) {
    p.method = SeekMethod::PacketIndex;  // a block's output overlaps the previous block's
    p.preroll_packets = 2;
  } else if (format == "ogg" && codec == AV_CODEC_ID_OPUS && mode == AudioSeekMode::Approximate) {
    p.method = SeekMethod::PacketIndex;
    p.preroll_samples = kOpusPreroll;
    p.preroll_packets = 1;
  }
  return p;
}

}  // namespace spdl_torch::core::detail
