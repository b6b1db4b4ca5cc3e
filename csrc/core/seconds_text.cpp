// SPDX-License-Identifier: BSD-3-Clause
#include "core/seconds_text.h"

#include <cmath>
#include <cstdio>

namespace spdl_torch::core {

std::string seconds_text(double seconds) {
  if (seconds == 0) return "0 s";  // also -0.0
  char buf[32];
  const double magnitude = std::fabs(seconds);
  if (magnitude < 1e9 && magnitude >= 1e-6) {
    std::snprintf(buf, sizeof(buf), "%.6f", seconds);
    std::string text(buf);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text + " s";
  }
  std::snprintf(buf, sizeof(buf), "%.6g", seconds);
  return std::string(buf) + " s";
}

}  // namespace spdl_torch::core
