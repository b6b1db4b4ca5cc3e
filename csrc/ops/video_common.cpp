#include "video_common.h"

namespace spdl_torch::ops {

core::VideoReadOptions video_read_options(const char* op, int64_t stream, int64_t threads, c10::string_view seek_mode,
                                          bool strict, bool apply_rotation, bool skip_nonref, int64_t max_pixels) {
  return translate_core_errors(op, [&] {
    core::VideoReadOptions o;
    o.stream = int(stream);
    o.threads = int(threads);
    o.seek_mode = core::parse_seek_mode(std::string(seek_mode));
    o.strict = strict;
    o.apply_rotation = apply_rotation;
    o.skip_nonref = skip_nonref;
    o.max_pixels = max_pixels;
    o.validate();
    return o;
  });
}

core::MediaSource video_source(const at::Tensor& data) {
  // An empty tensor may have no storage: point at a byte of ours, so the source stays "in memory" (the
  // demuxer then reports "empty input" instead of trying to open a path "").
  static const uint8_t kEmpty = 0;
  if (data.numel() == 0) return core::MediaSource::from_memory(&kEmpty, 0);
  return core::MediaSource::from_memory(data.data_ptr<uint8_t>(), size_t(data.numel()));
}

}  // namespace spdl_torch::ops
