// SPDX-License-Identifier: BSD-3-Clause
// Seconds as error messages print them: "0.04 s", "2 s", "1e+300 s", "nan s". Plain C++.
#pragma once

#include <string>

namespace spdl_torch::core {

// `seconds` with its unit: to the microsecond, trailing zeros dropped, below 1e9 s in magnitude; six
// significant digits otherwise (huge or tiny values, inf, nan), never a number of hundreds of digits.
std::string seconds_text(double seconds);

}  // namespace spdl_torch::core
