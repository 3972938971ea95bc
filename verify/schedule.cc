#include "verify/schedule.h"

#include <array>
#include <cctype>
#include <vector>

namespace lockstep::verify {
namespace {

struct Field {
  const char* name;
  int min;
  int max;
  const char* const* names;  // three-letter names for min.. (nullptr: none)
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr const char* kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
// Day of week accepts 7 (Sunday) and is folded to 0 after parsing.
constexpr std::array<Field, 5> kFields = {{{"minute", 0, 59, nullptr},
                                           {"hour", 0, 23, nullptr},
                                           {"day of month", 1, 31, nullptr},
                                           {"month", 1, 12, kMonthNames},
                                           {"day of week", 0, 7, kDayNames}}};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A number or (for month and weekday) a name; -1 when it is neither.
int value(std::string_view token, const Field& f) {
  if (token.empty() || token.size() > 4) return -1;
  bool digits = true;
  for (char c : token) digits = digits && std::isdigit(static_cast<unsigned char>(c)) != 0;
  if (digits) return std::stoi(std::string(token));
  if (f.names == nullptr || token.size() != 3) return -1;
  const std::string l = lower(token);
  for (int i = 0; i <= f.max - f.min; ++i) {
    if (f.names == kDayNames && i >= 7) break;
    if (l == f.names[i]) return f.min + i;
  }
  return -1;
}

Status fieldErrorSchedule(std::string_view text, size_t index, const Field& f,
                          const std::string& why) {
  return Status(Code::kInvalidArgument, "schedule \"" + std::string(text) + "\": field " +
                                            std::to_string(index + 1) + " (" + f.name +
                                            "): " + why);
}

// Sets the values `part` (one comma-separated element) denotes in `bits`.
Status parsePart(std::string_view text, size_t index, const Field& f, std::string_view part,
                 std::vector<bool>& bits) {
  std::string_view range = part;
  int step = 1;
  if (size_t slash = part.find('/'); slash != std::string_view::npos) {
    range = part.substr(0, slash);
    std::string_view s = part.substr(slash + 1);
    bool digits = !s.empty() && s.size() <= 3;
    for (char c : s) digits = digits && std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (!digits || std::stoi(std::string(s)) == 0)
      return fieldErrorSchedule(
          text, index, f, "step \"" + std::string(s) + "\" is not a whole number of at least 1");
    step = std::stoi(std::string(s));
  }
  int lo = f.min;
  int hi = f.max;
  if (range != "*") {
    size_t dash = range.find('-');
    std::string_view a = range.substr(0, dash);
    lo = value(a, f);
    if (lo < 0)
      return fieldErrorSchedule(text, index, f,
                                "\"" + std::string(a) + "\" is not a number" +
                                    (f.names ? " or a three-letter name" : ""));
    if (dash != std::string_view::npos) {
      std::string_view b = range.substr(dash + 1);
      hi = value(b, f);
      if (hi < 0)
        return fieldErrorSchedule(text, index, f,
                                  "\"" + std::string(b) + "\" is not a number" +
                                      (f.names ? " or a three-letter name" : ""));
    } else if (part.find('/') == std::string_view::npos) {
      hi = lo;  // a single value; `a/n` runs from a to the field's maximum
    }
    for (int v : {lo, hi}) {
      if (v < f.min || v > f.max)
        return fieldErrorSchedule(text, index, f,
                                  std::to_string(v) + " is out of range " + std::to_string(f.min) +
                                      "-" + std::to_string(f.max));
    }
    if (lo > hi)
      return fieldErrorSchedule(text, index, f,
                                "range " + std::string(range) + " runs backwards (" +
                                    std::to_string(lo) + " > " + std::to_string(hi) + ")");
  }
  for (int v = lo; v <= hi; v += step) bits[static_cast<size_t>(v)] = true;
  return Status::ok();
}

std::string_view expandMacro(std::string_view text) {
  if (text == "@hourly") return "0 * * * *";
  if (text == "@daily" || text == "@midnight") return "0 0 * * *";
  if (text == "@weekly") return "0 0 * * 0";
  if (text == "@monthly") return "0 0 1 * *";
  if (text == "@yearly" || text == "@annually") return "0 0 1 1 *";
  return "";
}

// The civil date of a day count since 1970-01-01 (the proleptic Gregorian
// calendar's era arithmetic).
struct Civil {
  int64_t year;
  int month;
  int day;
};

Civil civilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

StatusOr<Schedule> parseSchedule(std::string_view text) {
  Schedule s;
  s.text = std::string(text);
  std::string_view expr = text;
  if (!text.empty() && text.front() == '@') {
    expr = expandMacro(text);
    if (expr.empty())
      return Status(Code::kInvalidArgument,
                    "schedule \"" + std::string(text) +
                        "\": unknown macro (use @hourly, @daily, @midnight, @weekly, @monthly, "
                        "@yearly or @annually, or five fields)");
  }
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (at < expr.size()) {
    while (at < expr.size() && (expr[at] == ' ' || expr[at] == '\t')) ++at;
    size_t end = at;
    while (end < expr.size() && expr[end] != ' ' && expr[end] != '\t') ++end;
    if (end > at) fields.push_back(expr.substr(at, end - at));
    at = end;
  }
  if (fields.size() != kFields.size())
    return Status(Code::kInvalidArgument,
                  "schedule \"" + std::string(text) + "\": " + std::to_string(fields.size()) +
                      " field(s), want 5 (minute hour day-of-month month day-of-week) or a "
                      "macro such as @weekly");
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = kFields[i];
    std::vector<bool> bits(static_cast<size_t>(f.max) + 1, false);
    std::string_view list = fields[i];
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t comma = list.find(',', pos);
      if (comma == std::string_view::npos) comma = list.size();
      std::string_view part = list.substr(pos, comma - pos);
      if (part.empty())
        return fieldErrorSchedule(text, i, f,
                                  "empty list element in \"" + std::string(list) + "\"");
      if (Status st = parsePart(text, i, f, part, bits); !st.isOk()) return st;
      pos = comma + 1;
    }
    const bool star = list == "*";
    for (int v = f.min; v <= f.max; ++v) {
      if (!bits[static_cast<size_t>(v)]) continue;
      switch (i) {
        case 0:
          s.minutes.set(static_cast<size_t>(v));
          break;
        case 1:
          s.hours.set(static_cast<size_t>(v));
          break;
        case 2:
          s.daysOfMonth.set(static_cast<size_t>(v));
          break;
        case 3:
          s.months.set(static_cast<size_t>(v));
          break;
        default:
          s.daysOfWeek.set(static_cast<size_t>(v % 7));
          break;
      }
    }
    if (i == 2) s.anyDayOfMonth = star;
    if (i == 4) s.anyDayOfWeek = star;
  }
  return s;
}

std::optional<int64_t> nextRun(const Schedule& s, int64_t afterUnix) {
  // The next whole minute, then day by day: at most eight years of days.
  int64_t start = floorDiv(afterUnix, 60) * 60 + 60;
  int64_t day = floorDiv(start, 86400);
  int64_t minuteOfDay = (start - day * 86400) / 60;
  for (int i = 0; i < 8 * 366; ++i, ++day, minuteOfDay = 0) {
    const Civil c = civilFromDays(day);
    if (!s.months.test(static_cast<size_t>(c.month))) continue;
    const int weekday = static_cast<int>(((day % 7) + 11) % 7);  // 1970-01-01 was a Thursday
    const bool dom = s.daysOfMonth.test(static_cast<size_t>(c.day));
    const bool dow = s.daysOfWeek.test(static_cast<size_t>(weekday));
    bool matches = false;
    if (s.anyDayOfMonth && s.anyDayOfWeek) {
      matches = true;
    } else if (s.anyDayOfMonth) {
      matches = dow;
    } else if (s.anyDayOfWeek) {
      matches = dom;
    } else {
      matches = dom || dow;
    }
    if (!matches) continue;
    for (int64_t m = minuteOfDay; m < int64_t{24} * 60; ++m) {
      if (s.hours.test(static_cast<size_t>(m / 60)) && s.minutes.test(static_cast<size_t>(m % 60)))
        return day * 86400 + m * 60;
    }
  }
  return std::nullopt;
}

}  // namespace lockstep::verify
