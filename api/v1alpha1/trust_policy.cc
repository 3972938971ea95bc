#include "api/v1alpha1/trust_policy.h"

#include <algorithm>

#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

Status badTrustPolicy(const std::string& field, const std::string& why) {
  return invalidArgument("spec." + field + ": " + why);
}

StatusOr<std::vector<std::string>> strings(const json& parent, const std::string& key,
                                           const std::string& field) {
  std::vector<std::string> out;
  const json* list = decode::member(parent, key);
  if (list == nullptr) return out;
  if (!list->is_array()) return badTrustPolicy(field, "must be a list of strings");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& v = (*list)[i];
    if (!v.is_string() || v.get<std::string>().empty())
      return badTrustPolicy(field + "[" + std::to_string(i) + "]", "must be a non-empty string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

StatusOr<TrustPolicySpec> decodeTrustPolicySpec(const json& spec) {
  TrustPolicySpec out;
  const json* keys = decode::member(spec, "keys");
  if (keys == nullptr || !keys->is_array() || keys->empty())
    return badTrustPolicy("keys", "must list at least one {name, publicKey}");
  for (size_t i = 0; i < keys->size(); ++i) {
    const std::string field = "keys[" + std::to_string(i) + "]";
    const json& k = (*keys)[i];
    if (!k.is_object()) return badTrustPolicy(field, "must be an object {name, publicKey}");
    TrustPolicyKey key{decode::string(k, "name"), decode::string(k, "publicKey")};
    if (key.name.empty()) return badTrustPolicy(field + ".name", "is required");
    if (key.publicKey.find("-----BEGIN PUBLIC KEY-----") == std::string::npos)
      return badTrustPolicy(field + ".publicKey",
                            "holds no PEM public key (-----BEGIN PUBLIC KEY-----)");
    for (const TrustPolicyKey& seen : out.keys)
      if (seen.name == key.name)
        return badTrustPolicy(field + ".name", "\"" + key.name + "\" is listed twice");
    out.keys.push_back(std::move(key));
  }
  const json* rules = decode::member(spec, "rules");
  if (rules == nullptr || !rules->is_array() || rules->empty())
    return badTrustPolicy("rules", "must list at least one {repositories, stages, keys}");
  for (size_t i = 0; i < rules->size(); ++i) {
    const std::string field = "rules[" + std::to_string(i) + "]";
    const json& r = (*rules)[i];
    if (!r.is_object())
      return badTrustPolicy(field, "must be an object {repositories, stages, keys}");
    TrustRule rule;
    auto repos = strings(r, "repositories", field + ".repositories");
    if (!repos.isOk()) return repos.status();
    rule.repositories = std::move(*repos);
    auto stages = strings(r, "stages", field + ".stages");
    if (!stages.isOk()) return stages.status();
    rule.stages = std::move(*stages);
    auto names = strings(r, "keys", field + ".keys");
    if (!names.isOk()) return names.status();
    if (names->empty())
      return badTrustPolicy(field + ".keys", "must name at least one key of spec.keys");
    for (size_t j = 0; j < names->size(); ++j) {
      const std::string& n = (*names)[j];
      bool known = std::any_of(out.keys.begin(), out.keys.end(),
                               [&](const TrustPolicyKey& k) { return k.name == n; });
      if (!known)
        return badTrustPolicy(field + ".keys[" + std::to_string(j) + "]",
                              "\"" + n + "\" is not a name in spec.keys");
    }
    rule.keys = std::move(*names);
    out.rules.push_back(std::move(rule));
  }
  return out;
}

std::set<std::string> trustedKeyNames(const TrustPolicySpec& policy, const std::string& packageName,
                                      const std::string& stage) {
  std::set<std::string> out;
  for (const TrustRule& r : policy.rules) {
    bool repo = r.repositories.empty() ||
                std::any_of(r.repositories.begin(), r.repositories.end(),
                            [&](const std::string& p) { return packageName.rfind(p, 0) == 0; });
    bool st = stage.empty() || r.stages.empty() ||
              std::find(r.stages.begin(), r.stages.end(), stage) != r.stages.end();
    if (repo && st) out.insert(r.keys.begin(), r.keys.end());
  }
  return out;
}

}  // namespace lockstep::api::v1alpha1
