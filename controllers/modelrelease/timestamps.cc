#include "controllers/modelrelease/timestamps.h"

#include <chrono>
#include <ctime>

#include "operator/kube/clock.h"

namespace lockstep::controllers {

std::optional<int64_t> parseRfc3339(const std::string& text) {
  kube::Clock::WallTime t;
  if (!kube::parseTime(text, &t)) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::string formatRfc3339(int64_t unix) {
  auto t = static_cast<std::time_t>(unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace lockstep::controllers
