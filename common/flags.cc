#include "common/flags.h"

#include <cctype>
#include <charconv>
#include <limits>
#include <sstream>

namespace lockstep {
namespace {

Status checkValue(const FlagSpec& spec, const std::string& value) {
  const std::string flag = "flag --" + spec.name;
  switch (spec.type) {
    case FlagType::kString:
      return Status::ok();
    case FlagType::kBool:
      if (value == "true" || value == "false") return Status::ok();
      return invalidArgument(flag + ": want true or false, got \"" + value + "\"");
    case FlagType::kInt:
      return parseNonNegativeInt(value).status().withContext(flag);
    case FlagType::kDuration:
      return parseDuration(value).status().withContext(flag);
    case FlagType::kChoice: {
      std::string allowed;
      for (const auto& c : spec.choices) {
        if (c == value) return Status::ok();
        allowed += (allowed.empty() ? "" : ", ") + c;
      }
      return invalidArgument(flag + ": want one of " + allowed + ", got \"" + value + "\"");
    }
  }
  return Status::ok();
}

}  // namespace

Flags::Flags(std::vector<FlagSpec> specs, int maxPositional)
    : specs_(std::move(specs)), maxPositional_(maxPositional) {
  for (const auto& s : specs_) values_[s.name] = s.defaultValue;
}

const FlagSpec* Flags::find(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Status Flags::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (arg.size() > 1 && arg[0] == '-') return invalidArgument("unknown flag " + arg);
      if (static_cast<int>(positional_.size()) >= maxPositional_) {
        return invalidArgument("unexpected argument \"" + arg + "\"");
      }
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool hasValue = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    const FlagSpec* spec = find(name);
    if (spec == nullptr) return invalidArgument("unknown flag --" + name);
    if (!hasValue) {
      if (spec->type == FlagType::kBool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return invalidArgument("flag --" + name + " needs a value");
      }
    }
    values_[name] = value;
  }
  for (const auto& spec : specs_) LOCKSTEP_RETURN_IF_ERROR(checkValue(spec, values_[spec.name]));
  return Status::ok();
}

std::optional<int> Flags::parseCommandLine(int argc, const char* const* argv,
                                           const std::string& program, std::ostream& out,
                                           std::ostream& err) {
  if (Status s = parse(argc, argv); !s.isOk()) {
    err << program << ": " << s.message() << "\n" << usage(program);
    return kExitUsage;
  }
  if (help_) {
    out << usage(program);
    return 0;
  }
  return std::nullopt;
}

std::string Flags::get(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::string() : it->second;
}

bool Flags::getBool(const std::string& name) const { return get(name) == "true"; }

int Flags::getInt(const std::string& name) const {
  auto v = parseNonNegativeInt(get(name));
  return v.isOk() ? *v : 0;
}

std::chrono::milliseconds Flags::getDuration(const std::string& name) const {
  auto d = parseDuration(get(name));
  return d.isOk() ? *d : std::chrono::milliseconds(0);
}

std::string Flags::usage(const std::string& program) const {
  std::ostringstream out;
  out << "usage: " << program << " [flags]\n";
  for (const auto& s : specs_) {
    out << "  --" << s.name;
    if (s.type != FlagType::kBool) out << " VALUE";
    out << "\n      " << s.help;
    if (!s.defaultValue.empty()) out << " (default \"" << s.defaultValue << "\")";
    out << "\n";
  }
  return out.str();
}

StatusOr<int> parseNonNegativeInt(const std::string& text) {
  int v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || text[0] == '-' || ec != std::errc() || ptr != end) {
    return invalidArgument("want a non-negative integer, got \"" + text + "\"");
  }
  return v;
}

StatusOr<std::chrono::milliseconds> parseDuration(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return invalidArgument("bad duration \"" + text + "\": " + why);
  };
  if (text.empty()) return invalidArgument("empty duration");
  // About 292 years of milliseconds fit an int64; far beyond any timeout.
  constexpr double kMaxMs = 9.0e15;
  double totalMs = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (start == i) return bad("want e.g. 15s, 2m, 1h30m");
    double n = 0;
    auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + i, n);
    if (ec != std::errc() || ptr != text.data() + i) return bad("not a number");
    size_t unitStart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(unitStart, i - unitStart);
    double scale = 0;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60 * 1000;
    } else if (unit == "h") {
      scale = 3600 * 1000;
    } else {
      return bad("unit \"" + unit + "\" (want ms, s, m, h)");
    }
    totalMs += n * scale;
    if (!(totalMs <= kMaxMs)) return bad("too long");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(totalMs));
}

}  // namespace lockstep
