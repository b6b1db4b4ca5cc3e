// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/ffmpeg_utils.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
}

#include <cstdarg>
#include <cstring>

#include "core/errors.h"
#include <mutex>

namespace spdl_torch::core::detail {
namespace {

constexpr size_t kMaxLogBytes = 1024;

std::string& thread_log() {
  thread_local std::string log;
  return log;
}

void capture_log(void* avcl, int level, const char* fmt, va_list args) {
  if (level > AV_LOG_ERROR) return;
  char line[512];
  int print_prefix = 1;
  av_log_format_line2(avcl, level, fmt, args, line, sizeof(line), &print_prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string& log = thread_log();
  if (text.empty() || log.size() >= kMaxLogBytes) return;
  if (!log.empty()) log += "; ";
  log += text;
}

}  // namespace

void install_ffmpeg_log_capture() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(capture_log); });
}

void clear_ffmpeg_log() { thread_log().clear(); }

std::string ffmpeg_log() { return thread_log(); }

bool is_pcm_codec(AVCodecID id) {
  const AVCodecDescriptor* d = avcodec_descriptor_get(id);
  return d != nullptr && std::strncmp(d->name, "pcm_", 4) == 0;
}

std::string ffmpeg_error_string(int errnum) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(errnum, buf, sizeof(buf));
  return buf;
}

void throw_ffmpeg_error(const std::string& what, int errnum) {
  std::string message = what + ": " + ffmpeg_error_string(errnum);
  const std::string log = ffmpeg_log();
  if (!log.empty()) message += " (" + log + ")";
  throw DecodeError(message);
}

}  // namespace spdl_torch::core::detail
