// libFuzzer target: spec.verify.schedule. The input's first 8 bytes are the
// "after" time (Unix seconds), the rest the schedule text. A parsed schedule's
// next run must be a whole minute strictly after that time and itself match
// (the run after the run before it is itself).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "verify/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int64_t after = 0;
  if (size >= sizeof after) {
    std::memcpy(&after, data, sizeof after);
    data += sizeof after;
    size -= sizeof after;
  }
  // Keep the clock within years 1900..2400: the calendar arithmetic's domain.
  after = after % (int64_t{430} * 365 * 86400) + int64_t{430} * 365 * 86400 / 2 - 2208988800;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = lockstep::verify::parseSchedule(text);
  if (!s.isOk()) {
    if (s.status().message().empty()) std::abort();
    return 0;
  }
  auto next = lockstep::verify::nextRun(*s, after);
  if (!next) return 0;
  if (*next <= after || *next % 60 != 0) std::abort();
  auto again = lockstep::verify::nextRun(*s, *next - 1);
  if (!again || *again != *next) std::abort();
  return 0;
}
