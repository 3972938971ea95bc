// A small command-line flag parser for the operator's main: --name=value,
// --name value, --bool-flag / --bool-flag=false, and Go-style durations
// ("15s", "2m", "1h30m", "500ms"). Unknown flags and bad values are errors
// that name the flag. Pure: no I/O. Thread-safety: a value.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "operator/common/status.h"

namespace lockstep {

struct FlagSpec {
  std::string name;
  std::string defaultValue;
  std::string help;
  bool isBool = false;
};

class Flags {
 public:
  explicit Flags(std::vector<FlagSpec> specs);
  // Parses argv[1..]; positional arguments are an error.
  Status parse(int argc, const char* const* argv);
  std::string get(const std::string& name) const;
  bool getBool(const std::string& name) const;
  StatusOr<int> getInt(const std::string& name) const;
  StatusOr<std::chrono::milliseconds> getDuration(const std::string& name) const;
  bool helpRequested() const { return help_; }
  std::string usage(const std::string& program) const;

 private:
  const FlagSpec* find(const std::string& name) const;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

// "1h30m", "15s", "500ms", "2m" -> milliseconds; kInvalidArgument otherwise.
StatusOr<std::chrono::milliseconds> parseDuration(const std::string& text);

}  // namespace lockstep
