#include "verify/runtime_spec.h"

#include <nlohmann/json.hpp>

namespace lockstep::verify {
namespace {

using nlohmann::json;

Status fieldErrorRuntimeSpec(const std::string& where, std::string_view field,
                             std::string_view reason) {
  return invalidArgument(where + ": " + std::string(field) + ": " + std::string(reason));
}

}  // namespace

StatusOr<closure::Package> parseCanonicalLine(std::string_view line, const std::string& where) {
  std::vector<std::string> fields;
  size_t pos = 0;
  while (true) {
    size_t tab = line.find('\t', pos);
    fields.emplace_back(
        line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos));
    if (tab == std::string_view::npos) break;
    pos = tab + 1;
  }
  if (fields.size() != 4) {
    return invalidArgument(where + ": expected 4 TAB-separated fields, found " +
                           std::to_string(fields.size()));
  }
  closure::Package p{fields[0], fields[1], fields[2], {}};
  if (p.ecosystem != "pypi" && p.ecosystem != "conda" && p.ecosystem != "nix") {
    return invalidArgument(where + ": unknown ecosystem \"" + p.ecosystem + "\"");
  }
  if (p.name.empty()) return invalidArgument(where + ": empty name");
  pos = 0;
  const std::string& d = fields[3];
  while (!d.empty() && pos <= d.size()) {
    size_t comma = d.find(',', pos);
    p.digests.push_back(
        d.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return p;
}

StatusOr<RuntimeSpec> parseRuntimeJson(std::string_view text, const std::string& where) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(where + ": not valid JSON");
  if (!j.is_object()) return invalidArgument(where + ": not a JSON object");
  RuntimeSpec spec;
  for (auto [key, out] : {std::pair<const char*, std::string*>{"closureHash", &spec.closureHash},
                          {"format", &spec.format},
                          {"platform", &spec.platform},
                          {"environment", &spec.environment},
                          {"cuda", &spec.cuda},
                          {"minDriver", &spec.minDriver}}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_string()) return fieldErrorRuntimeSpec(where, key, "not a string");
    *out = it->get<std::string>();
  }
  if (auto it = j.find("rdma"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return fieldErrorRuntimeSpec(where, "rdma", "not a boolean");
    spec.rdma = it->get<bool>();
  }
  if (auto it = j.find("packages"); it != j.end() && !it->is_null()) {
    if (!it->is_array())
      return fieldErrorRuntimeSpec(where, "packages", "not a list of canonical lines");
    std::vector<closure::Package> pkgs;
    std::string text;
    for (size_t i = 0; i < it->size(); ++i) {
      const json& line = (*it)[i];
      const std::string field = "packages[" + std::to_string(i) + "]";
      if (!line.is_string()) return fieldErrorRuntimeSpec(where, field, "not a string");
      auto p = parseCanonicalLine(line.get<std::string>(), where + ": " + field);
      if (!p.isOk()) return p.status();
      pkgs.push_back(std::move(*p));
    }
    text = closure::canonicalText(pkgs);
    const std::string hash = closure::closureHashOfCanonicalText(text);
    if (spec.closureHash.empty()) {
      return fieldErrorRuntimeSpec(where, "closureHash", "missing (needed to check `packages`)");
    }
    if (hash != spec.closureHash) {
      return fieldErrorRuntimeSpec(
          where, "packages", "the lines hash to " + hash + ", not closureHash " + spec.closureHash);
    }
    spec.packages = std::move(pkgs);
  }
  return spec;
}

}  // namespace lockstep::verify
