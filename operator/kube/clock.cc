#include "operator/kube/clock.h"

#include <cstdio>
#include <ctime>

namespace lockstep::kube {

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

std::string formatTime(Clock::WallTime t, bool micro) {
  using namespace std::chrono;
  auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
  auto secs = static_cast<std::time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf);
  if (micro) {
    char f[16];
    std::snprintf(f, sizeof f, ".%06ld", frac);
    out += f;
  }
  out += "Z";
  return out;
}

bool parseTime(const std::string& text, Clock::WallTime* out) {
  int y, mo, d, h, mi, s;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) !=
      6) {
    return false;
  }
  auto pos = static_cast<size_t>(consumed);
  long long micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 6) {
        micros = micros * 10 + (text[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    while (digits++ < 6) micros *= 10;
  }
  long offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(text.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2) return false;
    offset = (text[pos] == '-' ? -1 : 1) * (oh * 3600L + om * 60L);
    pos += 6;
  } else {
    return false;
  }
  if (pos != text.size()) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  std::time_t secs = timegm(&tm) - offset;
  *out = Clock::WallTime(std::chrono::seconds(secs)) + std::chrono::microseconds(micros);
  return true;
}

int64_t unixSecondsOf(const std::string& text) {
  Clock::WallTime w;
  if (!parseTime(text, &w)) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(w.time_since_epoch()).count();
}

std::string timeOfUnixSeconds(int64_t seconds) {
  return formatTime(Clock::WallTime(std::chrono::seconds(seconds)), false);
}

}  // namespace lockstep::kube
