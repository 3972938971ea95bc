#include "operator/flags.h"

#include <cctype>
#include <sstream>

namespace lockstep {

Flags::Flags(std::vector<FlagSpec> specs) : specs_(std::move(specs)) {
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
    if (arg.rfind("--", 0) != 0) return invalidArgument("unexpected argument \"" + arg + "\"");
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
      if (spec->isBool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return invalidArgument("flag --" + name + " needs a value");
      }
    }
    if (spec->isBool && value != "true" && value != "false") {
      return invalidArgument("flag --" + name + ": want true or false, got \"" + value + "\"");
    }
    values_[name] = value;
  }
  return Status::ok();
}

std::string Flags::get(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::string() : it->second;
}

bool Flags::getBool(const std::string& name) const { return get(name) == "true"; }

StatusOr<int> Flags::getInt(const std::string& name) const {
  const std::string v = get(name);
  if (v.empty() || v.size() > 9)
    return invalidArgument("flag --" + name + ": want an integer, got \"" + v + "\"");
  for (char c : v) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return invalidArgument("flag --" + name + ": want an integer, got \"" + v + "\"");
    }
  }
  return std::stoi(v);
}

StatusOr<std::chrono::milliseconds> Flags::getDuration(const std::string& name) const {
  auto d = parseDuration(get(name));
  if (!d.isOk()) return d.status().withContext("flag --" + name);
  return d;
}

std::string Flags::usage(const std::string& program) const {
  std::ostringstream out;
  out << "usage: " << program << " [flags]\n";
  for (const auto& s : specs_) {
    out << "  --" << s.name;
    if (!s.isBool) out << " VALUE";
    out << "\n      " << s.help;
    if (!s.defaultValue.empty()) out << " (default \"" << s.defaultValue << "\")";
    out << "\n";
  }
  return out.str();
}

StatusOr<std::chrono::milliseconds> parseDuration(const std::string& text) {
  if (text.empty()) return invalidArgument("empty duration");
  double totalMs = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (start == i)
      return invalidArgument("bad duration \"" + text + "\": want e.g. 15s, 2m, 1h30m");
    double n = std::stod(text.substr(start, i - start));
    size_t unitStart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(unitStart, i - unitStart);
    double scale = 0;
    if (unit == "ms")
      scale = 1;
    else if (unit == "s")
      scale = 1000;
    else if (unit == "m")
      scale = 60 * 1000;
    else if (unit == "h")
      scale = 3600 * 1000;
    else
      return invalidArgument("bad duration \"" + text + "\": unit \"" + unit +
                             "\" (want ms, s, m, h)");
    totalMs += n * scale;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(totalMs));
}

}  // namespace lockstep
