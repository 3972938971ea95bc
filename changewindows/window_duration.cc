#include "changewindows/window_duration.h"

#include <string>

namespace lockstep::changewindows {

StatusOr<WindowDuration> parseWindowDuration(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  const auto bad = [&quoted]() {
    return invalidArgument(quoted + " is not a duration (integers with units d, h, m, s in that " +
                           "order: \"64h\", \"2d16h\", \"1h30m\")");
  };
  if (text.empty()) return invalidArgument("is empty (a duration: \"64h\", \"2d16h\")");
  static constexpr std::string_view kUnits = "dhms";
  static constexpr int64_t kUnitSeconds[] = {86400, 3600, 60, 1};
  WindowDuration d;
  size_t nextUnit = 0;  // units must come in the order of kUnits, each once
  size_t i = 0;
  while (i < text.size()) {
    int64_t value = 0;
    const size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      value = value * 10 + (text[i] - '0');
      if (value > kMaxWindowSeconds) return bad();
      ++i;
    }
    if (i == digits || i == text.size()) return bad();
    const size_t unit = kUnits.find(text[i]);
    if (unit == std::string_view::npos || unit < nextUnit) return bad();
    nextUnit = unit + 1;
    ++i;
    if (unit == 0) {
      d.days = value;
    } else {
      d.seconds += value * kUnitSeconds[unit];
    }
  }
  const int64_t total = d.days * 86400 + d.seconds;
  if (total < kMinWindowSeconds) return invalidArgument(quoted + " is shorter than 1m");
  if (total > kMaxWindowSeconds) return invalidArgument(quoted + " is longer than 366d");
  return d;
}

}  // namespace lockstep::changewindows
