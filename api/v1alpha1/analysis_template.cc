#include "api/v1alpha1/analysis_template.h"

#include <regex>
#include <set>

#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

std::string quoteAnalysisTemplate(const std::string& s) { return "\"" + s + "\""; }

Status badAnalysisTemplate(const std::string& field, const std::string& why) {
  return invalidArgument(field + ": " + why);
}

bool identifier(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

const std::set<std::string>& operatorPlaceholders() {
  static const std::set<std::string> names = {"selector", "namespace", "model",
                                              "release",  "track",     "pod"};
  return names;
}

// A placeholder of the query: its name ("selector", "args.window") and where it stands.
struct Placeholder {
  size_t begin = 0, end = 0;  // [begin, end) in the query, braces included
  std::string name;
};

// Every {{ name }} of `q`; "{{{x}}}" is a literal brace around {{x}}. An
// unclosed "{{" is an error naming its offset.
StatusOr<std::vector<Placeholder>> placeholders(const std::string& q) {
  std::vector<Placeholder> out;
  size_t i = 0;
  while ((i = q.find("{{", i)) != std::string::npos) {
    while (i + 2 < q.size() && q[i + 2] == '{') ++i;  // a literal '{' before it
    size_t close = q.find("}}", i + 2);
    if (close == std::string::npos)
      return badAnalysisTemplate("spec.query",
                                 "\"{{\" at offset " + std::to_string(i) + " is never closed");
    std::string inner = q.substr(i + 2, close - i - 2);
    const size_t a = inner.find_first_not_of(" \t");
    const size_t b = inner.find_last_not_of(" \t");
    inner = a == std::string::npos ? "" : inner.substr(a, b - a + 1);
    out.push_back({i, close + 2, inner});
    i = close + 2;
  }
  return out;
}

bool matchesType(TemplateArgType t, const std::string& v) {
  static const std::regex duration("([0-9]+(ms|s|m|h|d|w|y))+");
  static const std::regex number("[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  switch (t) {
    case TemplateArgType::kDuration:
      return std::regex_match(v, duration);
    case TemplateArgType::kNumber:
      return std::regex_match(v, number);
    case TemplateArgType::kString:
      for (char c : v) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) return false;
      }
      return true;
  }
  return false;
}

const char* typeRule(TemplateArgType t) {
  switch (t) {
    case TemplateArgType::kDuration:
      return "a PromQL duration such as 5m or 1h30m";
    case TemplateArgType::kNumber:
      return "a decimal number such as 0.95";
    case TemplateArgType::kString:
      return "text without control characters";
  }
  return "";
}

// `v` checked as a value of `arg`; the error names `field`.
Status checkValue(const TemplateArg& arg, const std::string& v, const std::string& field) {
  if (v.size() > kMaxTemplateArgLength)
    return badAnalysisTemplate(field, "is " + std::to_string(v.size()) +
                                          " characters long, more than " +
                                          std::to_string(kMaxTemplateArgLength));
  if (!matchesType(arg.type, v))
    return badAnalysisTemplate(field, quoteAnalysisTemplate(v) + " is not a " +
                                          templateArgTypeName(arg.type) + " (" +
                                          typeRule(arg.type) + ")");
  if (!arg.pattern.empty() && !std::regex_match(v, std::regex(arg.pattern)))
    return badAnalysisTemplate(field, quoteAnalysisTemplate(v) +
                                          " does not match the template's pattern " +
                                          quoteAnalysisTemplate(arg.pattern));
  return Status::ok();
}

}  // namespace

const char* templateArgTypeName(TemplateArgType t) {
  switch (t) {
    case TemplateArgType::kString:
      return "string";
    case TemplateArgType::kDuration:
      return "duration";
    case TemplateArgType::kNumber:
      return "number";
  }
  return "?";
}

std::string promqlString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          static const char* hex = "0123456789abcdef";
          out += "\\x";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

StatusOr<AnalysisTemplateSpec> decodeAnalysisTemplateSpec(const json& spec) {
  AnalysisTemplateSpec out;
  if (!spec.is_object()) return badAnalysisTemplate("spec", "must be an object {query, args}");
  const json* query = decode::member(spec, "query");
  if (query == nullptr || !query->is_string() || query->get<std::string>().empty())
    return badAnalysisTemplate("spec.query", "is required (a PromQL query)");
  out.query = query->get<std::string>();
  std::set<std::string> declared;
  if (const json* args = decode::member(spec, "args"); args != nullptr && !args->is_null()) {
    if (!args->is_array())
      return badAnalysisTemplate("spec.args", "must be a list of {name, type, default}");
    for (size_t i = 0; i < args->size(); ++i) {
      const std::string f = "spec.args[" + std::to_string(i) + "]";
      const json& a = (*args)[i];
      if (!a.is_object()) return badAnalysisTemplate(f, "must be an object {name, type, default}");
      TemplateArg arg;
      arg.name = decode::string(a, "name");
      if (!identifier(arg.name))
        return badAnalysisTemplate(
            f + ".name", quoteAnalysisTemplate(arg.name) +
                             " is not a name (a letter, then letters, digits or _; at most "
                             "63)");
      if (!declared.insert(arg.name).second)
        return badAnalysisTemplate(f + ".name",
                                   quoteAnalysisTemplate(arg.name) + " is declared twice");
      const std::string type = decode::string(a, "type");
      if (type.empty() || type == "string") {
        arg.type = TemplateArgType::kString;
      } else if (type == "duration") {
        arg.type = TemplateArgType::kDuration;
      } else if (type == "number") {
        arg.type = TemplateArgType::kNumber;
      } else {
        return badAnalysisTemplate(
            f + ".type", quoteAnalysisTemplate(type) + " is not string, duration or number");
      }
      arg.pattern = decode::string(a, "pattern");
      if (!arg.pattern.empty()) {
        if (arg.type != TemplateArgType::kString)
          return badAnalysisTemplate(f + ".pattern", "applies to type string only");
        try {
          std::regex check(arg.pattern);
        } catch (const std::regex_error& e) {
          return badAnalysisTemplate(
              f + ".pattern", quoteAnalysisTemplate(arg.pattern) + " is not a regular expression");
        }
      }
      if (const json* d = decode::member(a, "default"); d != nullptr && !d->is_null()) {
        std::string v = d->is_string() ? d->get<std::string>() : d->dump();
        if (Status s = checkValue(arg, v, f + ".default"); !s.isOk()) return s;
        arg.defaultValue = v;
      }
      out.args.push_back(std::move(arg));
    }
  }
  auto found = placeholders(out.query);
  if (!found.isOk()) return found.status();
  bool pinned = false;
  std::set<std::string> used;
  for (const Placeholder& p : *found) {
    if (p.name.rfind("args.", 0) == 0) {
      const std::string name = p.name.substr(5);
      if (declared.count(name) == 0)
        return badAnalysisTemplate(
            "spec.query", "{{" + p.name + "}} names an argument spec.args does not declare");
      used.insert(name);
    } else if (operatorPlaceholders().count(p.name) == 0) {
      return badAnalysisTemplate(
          "spec.query",
          "{{" + p.name +
              "}} is not a placeholder (selector, namespace, model, release, track, pod, "
              "args.<name>)");
    }
    if (p.name == "selector" || p.name == "namespace") pinned = true;
  }
  if (!pinned)
    return badAnalysisTemplate(
        "spec.query",
        "uses neither {{selector}} nor {{namespace}}: its series would not be pinned to the "
        "measured release's namespace");
  for (const TemplateArg& a : out.args)
    if (used.count(a.name) == 0)
      return badAnalysisTemplate("spec.args", "argument " + quoteAnalysisTemplate(a.name) +
                                                  " is declared but spec.query never "
                                                  "uses {{args." +
                                                  a.name + "}}");
  return out;
}

StatusOr<std::map<std::string, std::string>> checkTemplateArgs(
    const AnalysisTemplateSpec& spec, const std::map<std::string, std::string>& given,
    const std::string& where) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : given) {
    bool known = false;
    for (const TemplateArg& a : spec.args) known = known || a.name == name;
    if (!known) {
      std::string names;
      for (const TemplateArg& a : spec.args) names += (names.empty() ? "" : ", ") + a.name;
      return badAnalysisTemplate(where + ".args." + name,
                                 "is not an argument of the template (it declares: " +
                                     (names.empty() ? std::string("none") : names) + ")");
    }
  }
  for (const TemplateArg& a : spec.args) {
    auto it = given.find(a.name);
    if (it == given.end()) {
      if (!a.defaultValue)
        return badAnalysisTemplate(
            where + ".args." + a.name,
            "is required (a " + std::string(templateArgTypeName(a.type)) + ")");
      out[a.name] = *a.defaultValue;
      continue;
    }
    if (Status s = checkValue(a, it->second, where + ".args." + a.name); !s.isOk()) return s;
    out[a.name] = it->second;
  }
  return out;
}

std::string renderAnalysisTemplate(const AnalysisTemplateSpec& spec,
                                   const std::map<std::string, std::string>& args,
                                   const TemplateContext& c) {
  auto found = placeholders(spec.query);
  if (!found.isOk()) return spec.query;  // decodeAnalysisTemplateSpec refused it already
  std::string out;
  size_t at = 0;
  for (const Placeholder& p : *found) {
    out += spec.query.substr(at, p.begin - at);
    at = p.end;
    if (p.name == "selector") {
      out += "namespace=" + promqlString(c.ns) + ",model=" + promqlString(c.model) +
             ",release=" + promqlString(c.release) + ",track=" + promqlString(c.track);
    } else if (p.name == "namespace") {
      out += promqlString(c.ns);
    } else if (p.name == "model") {
      out += promqlString(c.model);
    } else if (p.name == "release") {
      out += promqlString(c.release);
    } else if (p.name == "track") {
      out += promqlString(c.track);
    } else if (p.name == "pod") {
      out += promqlString(c.model + "-" + c.track + "-.*");
    } else if (p.name.rfind("args.", 0) == 0) {
      const std::string name = p.name.substr(5);
      TemplateArgType type = TemplateArgType::kString;
      for (const TemplateArg& a : spec.args)
        if (a.name == name) type = a.type;
      auto it = args.find(name);
      const std::string v = it == args.end() ? std::string() : it->second;
      // Checked by checkTemplateArgs; a raw value that is not of its type is
      // never spliced in (a quoted string is at worst a syntax error).
      out += type != TemplateArgType::kString && matchesType(type, v) ? v : promqlString(v);
    }
  }
  return out + spec.query.substr(at);
}

}  // namespace lockstep::api::v1alpha1
