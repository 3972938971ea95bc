#include "api/v1alpha1/approval.h"

#include <algorithm>

#include "api/v1alpha1/keys.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

std::string quote(const std::string& s) { return "\"" + s + "\""; }

bool allDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<std::string> decodeApprovalPolicy(const json& stage, const std::string& where,
                                                ApprovalPolicy& out) {
  out = ApprovalPolicy{};
  const std::string path = where + ".approval";
  if (!stage.is_object()) return std::nullopt;
  auto it = stage.find("approval");
  if (it == stage.end() || it->is_null()) return std::nullopt;
  const json& a = *it;
  std::string policy;
  if (a.is_string()) {
    policy = a.get<std::string>();
  } else if (a.is_object()) {
    out.objectForm = true;
    for (const auto& [key, value] : a.items()) {
      if (key != "policy" && key != "minApprovers" && key != "allowSelfApproval")
        return path + "." + key + ": unknown field (policy, minApprovers, allowSelfApproval)";
    }
    auto p = a.find("policy");
    if (p == a.end() || !p->is_string()) return path + ".policy: required: Automatic or Manual";
    policy = p->get<std::string>();
    if (auto m = a.find("minApprovers"); m != a.end()) {
      if (!m->is_number_integer() || m->get<int64_t>() < 1 || m->get<int64_t>() > kMaxApprovers)
        return path + ".minApprovers: must be an integer in 1.." + std::to_string(kMaxApprovers);
      out.minApprovers = static_cast<int>(m->get<int64_t>());
    }
    if (auto s = a.find("allowSelfApproval"); s != a.end()) {
      if (!s->is_boolean()) return path + ".allowSelfApproval: must be true or false";
      out.allowSelfApproval = s->get<bool>();
    }
  } else {
    return path + ": must be Automatic, Manual or {policy: Manual, minApprovers: N}";
  }
  if (policy == "Manual") {
    out.manual = true;
  } else if (policy != "Automatic") {
    return path + (out.objectForm ? ".policy" : "") + ": " + quote(policy) +
           " is not Automatic or Manual";
  } else if (out.minApprovers != 1 || out.allowSelfApproval) {
    return path + ": minApprovers and allowSelfApproval need policy Manual";
  }
  return std::nullopt;
}

std::optional<ApprovalKey> parseApprovalKey(const std::string& suffix) {
  ApprovalKey k;
  auto dot = suffix.find('.');
  if (dot == std::string::npos) {
    k.stage = suffix;
    return k;
  }
  k.stage = suffix.substr(0, dot);
  std::string slot = suffix.substr(dot + 1);
  if (!allDigits(slot) || slot.size() > 2) return std::nullopt;
  k.slot = std::stoi(slot);
  if (k.slot < 2 || k.slot > kMaxApprovers || slot[0] == '0') return std::nullopt;
  return k;
}

std::vector<StageApproval> stageApprovals(const json& release, const std::string& stage) {
  std::vector<StageApproval> out;
  if (!release.is_object()) return out;
  auto meta = release.find("metadata");
  if (meta == release.end() || !meta->is_object()) return out;
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return out;
  const std::string prefix = kApproveAnnotationPrefix;
  for (const auto& [key, value] : ann->items()) {  // sorted by key
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    auto k = parseApprovalKey(key.substr(prefix.size()));
    if (!k || k->stage != stage) continue;
    out.push_back({key, value.is_string() ? value.get<std::string>() : std::string()});
  }
  return out;
}

std::string releaseCreator(const json& release) {
  const json* ann = nullptr;
  if (release.is_object() && release.contains("metadata") && release["metadata"].is_object() &&
      release["metadata"].contains("annotations"))
    ann = &release["metadata"]["annotations"];
  if (ann == nullptr || !ann->is_object()) return "";
  auto it = ann->find(kCreatedByAnnotation);
  return it != ann->end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool isServiceAccountUser(const std::string& user) {
  return user.rfind("system:serviceaccount:", 0) == 0;
}

ApprovalDecision decideApproval(const ApprovalPolicy& policy,
                                const std::vector<StageApproval>& approvals,
                                const std::string& creator, const ApprovalRules& rules) {
  ApprovalDecision d;
  if (!policy.manual) {
    d.approved = true;
    return d;
  }
  std::vector<std::string> ignored;
  std::vector<std::string> accounts;  // ServiceAccounts, when they may not approve
  for (const StageApproval& a : approvals) {
    if (a.user.empty()) continue;
    if (std::find(d.approvers.begin(), d.approvers.end(), a.user) != d.approvers.end()) continue;
    if (!rules.serviceAccountsApprove && isServiceAccountUser(a.user)) {
      if (std::find(accounts.begin(), accounts.end(), a.user) == accounts.end())
        accounts.push_back(a.user);
      continue;
    }
    if (!policy.allowSelfApproval && !creator.empty() && a.user == creator) {
      ignored.push_back(a.user);
      continue;
    }
    d.approvers.push_back(a.user);
  }
  d.approved = static_cast<int>(d.approvers.size()) >= policy.minApprovers;
  if (!d.approved) {
    d.message = "waiting for manual approval: " + std::to_string(d.approvers.size()) + " of " +
                std::to_string(policy.minApprovers) + " distinct approver(s)";
    if (!ignored.empty())
      d.message += "; the release's creator " + quote(ignored.front()) +
                   " cannot approve it (allowSelfApproval is false)";
    if (!accounts.empty())
      d.message += "; ServiceAccount " + quote(accounts.front()) +
                   " does not count: approvers are people (the platform's chart value "
                   "approvals.allowServiceAccounts)";
  }
  return d;
}

}  // namespace lockstep::api::v1alpha1
