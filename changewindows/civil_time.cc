#include "changewindows/civil_time.h"

#include <cstdio>

namespace lockstep::changewindows {

std::string formatCivil(const CivilSecond& c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d", static_cast<long long>(c.year),
                c.month, c.day, c.hour, c.minute, c.second);
  return buf;
}

}  // namespace lockstep::changewindows
