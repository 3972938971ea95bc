#include "api/v1alpha1/approval.h"

#include <algorithm>

#include "api/v1alpha1/keys.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

std::string quoteApproval(const std::string& s) { return "\"" + s + "\""; }

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
      if (key != "policy" && key != "minApprovers" && key != "allowSelfApproval" &&
          key != "fromGroups")
        return path + "." + key +
               ": unknown field (policy, minApprovers, allowSelfApproval, fromGroups)";
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
    if (auto g = a.find("fromGroups"); g != a.end()) {
      const std::string gp = path + ".fromGroups";
      if (!g->is_array() || g->empty() || g->size() > static_cast<size_t>(kMaxFromGroups))
        return gp + ": must be a list of 1.." + std::to_string(kMaxFromGroups) +
               " group names (only approvers in one of them count)";
      for (size_t i = 0; i < g->size(); ++i) {
        const json& v = (*g)[i];
        const std::string ip = gp + "[" + std::to_string(i) + "]";
        if (!v.is_string() || v.get<std::string>().empty())
          return ip + ": must be a group name (a non-empty string)";
        const std::string name = v.get<std::string>();
        if (std::find(out.fromGroups.begin(), out.fromGroups.end(), name) != out.fromGroups.end())
          return ip + ": " + quoteApproval(name) + " is listed twice";
        out.fromGroups.push_back(name);
      }
    }
  } else {
    return path + ": must be Automatic, Manual or {policy: Manual, minApprovers: N}";
  }
  if (policy == "Manual") {
    out.manual = true;
  } else if (policy != "Automatic") {
    return path + (out.objectForm ? ".policy" : "") + ": " + quoteApproval(policy) +
           " is not Automatic or Manual";
  } else if (out.minApprovers != 1 || out.allowSelfApproval || !out.fromGroups.empty()) {
    return path + ": minApprovers, allowSelfApproval and fromGroups need policy Manual";
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
    StageApproval a{key, value.is_string() ? value.get<std::string>() : std::string(), {}, false};
    auto g = ann->find(approverGroupsKey(key));
    if (g != ann->end() && g->is_string()) {
      if (auto groups = decodeApproverGroups(g->get<std::string>())) {
        a.groups = std::move(*groups);
        a.groupsRecorded = true;
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::string approverGroupsKey(const std::string& approvalKey) {
  const std::string prefix = kApproveAnnotationPrefix;
  if (approvalKey.compare(0, prefix.size(), prefix) != 0) return "";
  return kApproverGroupsAnnotationPrefix + approvalKey.substr(prefix.size());
}

std::string encodeApproverGroups(const std::vector<std::string>& groups) {
  return json(groups).dump();
}

std::optional<std::vector<std::string>> decodeApproverGroups(const std::string& value) {
  json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const json& g : j) {
    if (!g.is_string()) return std::nullopt;
    out.push_back(g.get<std::string>());
  }
  return out;
}

bool inAnyGroup(const std::vector<std::string>& groups,
                const std::vector<std::string>& fromGroups) {
  for (const std::string& g : groups) {
    if (std::find(fromGroups.begin(), fromGroups.end(), g) != fromGroups.end()) return true;
  }
  return false;
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
  std::vector<std::string> accounts;   // ServiceAccounts, when they may not approve
  std::vector<std::string> outsiders;  // not in fromGroups (or no groups recorded)
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
    if (!policy.fromGroups.empty() &&
        !(a.groupsRecorded && inAnyGroup(a.groups, policy.fromGroups))) {
      if (std::find(outsiders.begin(), outsiders.end(), a.user) == outsiders.end())
        outsiders.push_back(a.user);
      continue;
    }
    d.approvers.push_back(a.user);
    d.counted.push_back({a.user, a.groups, a.groupsRecorded});
  }
  d.approved = static_cast<int>(d.approvers.size()) >= policy.minApprovers;
  if (!d.approved) {
    d.message = "waiting for manual approval: " + std::to_string(d.approvers.size()) + " of " +
                std::to_string(policy.minApprovers) + " distinct approver(s)";
    if (!ignored.empty())
      d.message += "; the release's creator " + quoteApproval(ignored.front()) +
                   " cannot approve it (allowSelfApproval is false)";
    if (!accounts.empty())
      d.message += "; ServiceAccount " + quoteApproval(accounts.front()) +
                   " does not count: approvers are people (the platform's chart value "
                   "approvals.allowServiceAccounts)";
    if (!outsiders.empty()) {
      std::string groups;
      for (const std::string& g : policy.fromGroups)
        groups += (groups.empty() ? "" : ", ") + quoteApproval(g);
      d.message +=
          "; " + quoteApproval(outsiders.front()) +
          " does not count: not in a group the stage takes approvals from (fromGroups: " + groups +
          ")";
    }
  }
  return d;
}

}  // namespace lockstep::api::v1alpha1
