// Flags: the one command-line flag parser of Lockstep's binaries:
// --name=value, --name value, --bool-flag / --bool-flag=false. Every flag has
// a type (string, bool, int, duration, one of a set of choices), and parse()
// checks every value — defaults included — so a bad value is a clear error
// naming the flag before main wires anything (exit code 2, as `flag` in Go).
// Durations are Go-style ("15s", "2m", "1h30m", "500ms").
// Pure: no I/O but the streams it is given. Thread-safety: a value.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep {

enum class FlagType { kString, kBool, kInt, kDuration, kChoice };

struct FlagSpec {
  std::string name;
  std::string defaultValue;
  std::string help;
  FlagType type = FlagType::kString;
  std::vector<std::string> choices = {};  // kChoice: the allowed values
};

class Flags {
 public:
  // Exit code for a command line that cannot be parsed.
  static constexpr int kExitUsage = 2;

  // `maxPositional`: how many arguments that are not flags (a FILE, or "-") may follow.
  explicit Flags(std::vector<FlagSpec> specs, int maxPositional = 0);
  // Parses argv[1..]; unknown flags, bad values and extra positional arguments are errors.
  Status parse(int argc, const char* const* argv);
  // parse() for main: nullopt to go on; otherwise the exit code to return at once
  // (0 after printing the usage for --help, kExitUsage after printing the error
  // and the usage to `err`).
  std::optional<int> parseCommandLine(int argc, const char* const* argv, const std::string& program,
                                      std::ostream& out, std::ostream& err);

  std::string get(const std::string& name) const;
  bool getBool(const std::string& name) const;
  // Values parse() has checked; 0 for a flag of another type.
  int getInt(const std::string& name) const;
  std::chrono::milliseconds getDuration(const std::string& name) const;
  bool helpRequested() const { return help_; }
  const std::vector<std::string>& positional() const { return positional_; }
  std::string usage(const std::string& program) const;

 private:
  const FlagSpec* find(const std::string& name) const;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  int maxPositional_ = 0;
  bool help_ = false;
};

// "1h30m", "15s", "500ms", "2m", "1.5h" -> milliseconds; kInvalidArgument otherwise
// (never throws, also not on absurdly long numbers).
StatusOr<std::chrono::milliseconds> parseDuration(const std::string& text);
// A non-negative decimal integer that fits an int; kInvalidArgument otherwise.
StatusOr<int> parseNonNegativeInt(const std::string& text);

}  // namespace lockstep
