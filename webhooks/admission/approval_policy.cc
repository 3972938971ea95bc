#include "webhooks/admission/approval_policy.h"

#include <algorithm>

#include "api/v1alpha1/approval.h"
#include "webhooks/admission/json_access.h"
#include "webhooks/admission/release_actions.h"
#include "webhooks/admission/release_immutability.h"

namespace lockstep::webhooks {
namespace {

namespace ja = json_access;
namespace v1 = api::v1alpha1;
using nlohmann::json;

std::string quoteApprovalPolicy(const std::string& s) { return "\"" + s + "\""; }

std::string createdByPath() {
  return std::string("metadata.annotations[\"") + v1::kCreatedByAnnotation + "\"]";
}

const json* createdBy(const json* release) {
  return ja::child(ja::at(release, {"metadata", "annotations"}), v1::kCreatedByAnnotation);
}

std::string joinQuotedApprovalPolicy(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + quoteApprovalPolicy(n);
  return out;
}

std::string describeApprovalPolicy(const json* v) {
  if (v == nullptr) return "<unset>";
  return v->is_string() ? quoteApprovalPolicy(v->get<std::string>())
                        : "<" + std::string(v->type_name()) + ">";
}

int64_t generation(const json* release) {
  const json* g = ja::at(release, {"metadata", "generation"});
  return g != nullptr && g->is_number_integer() ? g->get<int64_t>() : 0;
}

struct StagePolicy {
  std::string name;
  size_t index = 0;
  v1::ApprovalPolicy policy;
  bool decoded = false;
};

std::vector<StagePolicy> stagePolicies(const json* release, std::vector<std::string>* invalid) {
  std::vector<StagePolicy> out;
  const json* stages = ja::at(release, {"spec", "stages"});
  if (!ja::isArray(stages)) return out;
  for (size_t i = 0; i < stages->size(); ++i) {
    StagePolicy p;
    p.index = i;
    p.name = ja::strOr(ja::child(&(*stages)[i], "name"));
    auto err =
        v1::decodeApprovalPolicy((*stages)[i], "spec.stages[" + std::to_string(i) + "]", p.policy);
    p.decoded = !err;
    if (err && invalid != nullptr) invalid->push_back(*err);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

void checkApprovalRules(const ModelReleaseReview& r, std::vector<std::string>& invalid,
                        std::vector<std::string>& forbidden, std::vector<std::string>& warnings) {
  const bool update = r.operation == Operation::kUpdate && r.oldRelease != nullptr;
  const json* spec = ja::child(r.release, "spec");
  const json* oldSpec = update ? ja::child(r.oldRelease, "spec") : nullptr;
  const bool specChanged = update && !firstDifference(spec, oldSpec, "spec").empty();

  // The creator.
  const json* creator = createdBy(r.release);
  if (!update) {
    if (creator != nullptr && (!creator->is_string() || *creator != r.user.username)) {
      forbidden.push_back(createdByPath() + ": value " + describeApprovalPolicy(creator) +
                          " must be your own user name " + quoteApprovalPolicy(r.user.username) +
                          " (it records who created the release)");
    }
  } else {
    const json* before = createdBy(r.oldRelease);
    bool same = (creator == nullptr && before == nullptr) ||
                (creator != nullptr && before != nullptr && *creator == *before);
    if (!same) {
      invalid.push_back(createdByPath() + ": field is immutable (was " +
                        describeApprovalPolicy(before) + ", now " +
                        describeApprovalPolicy(creator) + "); it records who created the release");
    }
  }
  const std::string creatorName = v1::releaseCreator(update ? *r.oldRelease : *r.release);

  // Stage policies (decoded again only when the stages are new or changed).
  const json* stagesNow = ja::child(spec, "stages");
  const json* stagesBefore = ja::child(oldSpec, "stages");
  const bool stagesChanged =
      !update || stagesNow == nullptr || stagesBefore == nullptr || *stagesNow != *stagesBefore;
  std::vector<StagePolicy> policies = stagePolicies(r.release, stagesChanged ? &invalid : nullptr);
  if (stagesChanged && creatorName.empty()) {
    for (const StagePolicy& p : policies) {
      if (!p.decoded || !p.policy.manual) continue;
      const std::string where = "spec.stages[" + std::to_string(p.index) + "].approval";
      if (!update) {
        // The mutating webhook records the creator of every new release.
        invalid.push_back(where +
                          ": Manual, but the release records no creator: " + createdByPath() +
                          " is set on CREATE by the mutating webhook "
                          "creator.modelreleases.lockstep.dev (is the chart's "
                          "MutatingWebhookConfiguration installed?); or set it to your user name " +
                          quoteApprovalPolicy(r.user.username) + " (separation of duties)");
      } else {
        // A release created before Lockstep recorded creators.
        warnings.push_back("lockstep: " + where +
                           ": Manual, but the release records no creator (created before "
                           "Lockstep recorded " +
                           createdByPath() + "), so its creator is not kept from approving it");
      }
    }
  }

  // A release created by a ServiceAccount (CI, Argo CD, Flux) on someone's behalf: that
  // someone is not known here, so nothing keeps them from approving a one-approver stage.
  if (!update && v1::isServiceAccountUser(r.user.username)) {
    for (const StagePolicy& p : policies) {
      if (!p.decoded || !p.policy.manual || p.policy.minApprovers >= 2 ||
          !p.policy.fromGroups.empty())
        continue;
      warnings.push_back("lockstep: spec.stages[" + std::to_string(p.index) +
                         "].approval: the release is created by ServiceAccount " +
                         quoteApprovalPolicy(r.user.username) +
                         ", so its creator check excludes only that ServiceAccount: the person "
                         "who asked for the release is not known to the API server and may "
                         "approve it alone; require minApprovers: 2 or fromGroups "
                         "(docs/security.md \"Who created a release\")");
    }
  }

  // Approvals this write adds or changes.
  bool approvalAdded = false;
  const json* annotations = ja::at(r.release, {"metadata", "annotations"});
  const json* oldAnnotations = ja::at(r.oldRelease, {"metadata", "annotations"});
  const std::string groups = v1::encodeApproverGroups(r.user.groups);
  std::vector<std::string> approvalsWritten;
  for (const ReleaseAction& a : changedReleaseActions(r.release, r.oldRelease)) {
    if (a.kind != ReleaseActionKind::kApprove) continue;
    approvalAdded = true;
    approvalsWritten.push_back(a.annotation);
    const std::string path = "metadata.annotations[" + quoteApprovalPolicy(a.annotation) + "]";
    auto it = std::find_if(policies.begin(), policies.end(),
                           [&](const StagePolicy& p) { return p.name == a.stage; });
    if (it == policies.end()) continue;  // "not a stage of this release" is reported elsewhere
    // The approver's groups, recorded next to the approval by the mutating webhook.
    const std::string groupsKey = v1::approverGroupsKey(a.annotation);
    const json* recorded = ja::child(annotations, groupsKey);
    const std::string groupsPath = "metadata.annotations[" + quoteApprovalPolicy(groupsKey) + "]";
    if (recorded == nullptr) {
      invalid.push_back(groupsPath +
                        ": required with the approval: the mutating webhook "
                        "creator.modelreleases.lockstep.dev records the approver's groups on "
                        "UPDATE (is the chart's MutatingWebhookConfiguration installed?)");
    } else if (!recorded->is_string() || recorded->get<std::string>() != groups) {
      forbidden.push_back(groupsPath + ": value " + describeApprovalPolicy(recorded) +
                          " must be your own groups " + quoteApprovalPolicy(groups) +
                          " (it records the approver's groups)");
    }
    if (!it->policy.fromGroups.empty() && !v1::inAnyGroup(r.user.groups, it->policy.fromGroups)) {
      forbidden.push_back(
          path + ": user " + quoteApprovalPolicy(r.user.username) + " is in none of the groups " +
          "stage " + quoteApprovalPolicy(a.stage) + " takes approvals from (fromGroups: " +
          joinQuotedApprovalPolicy(it->policy.fromGroups) + "; the user's groups: " +
          (r.user.groups.empty() ? "none" : joinQuotedApprovalPolicy(r.user.groups)) + ")");
    }
    if (!a.value.empty() && a.value == creatorName && !it->policy.allowSelfApproval) {
      forbidden.push_back(path + ": user " + quoteApprovalPolicy(a.value) +
                          " created this release and cannot approve it (separation of duties); "
                          "another user must approve stage " +
                          quoteApprovalPolicy(a.stage) +
                          ", unless the stage sets approval: {policy: Manual, "
                          "allowSelfApproval: true}");
    }
    for (const v1::StageApproval& other : v1::stageApprovals(*r.release, a.stage)) {
      if (other.annotation != a.annotation && !a.value.empty() && other.user == a.value) {
        invalid.push_back(path + ": user " + quoteApprovalPolicy(a.value) +
                          " already approved stage " + quoteApprovalPolicy(a.stage) + " (" +
                          other.annotation + "); minApprovers counts distinct users");
        break;
      }
    }
  }
  // Groups annotations are written only with their approval, and stay while it stands.
  const std::string groupsPrefix = v1::kApproverGroupsAnnotationPrefix;
  if (annotations != nullptr && annotations->is_object()) {
    for (const auto& [key, value] : annotations->items()) {
      if (key.compare(0, groupsPrefix.size(), groupsPrefix) != 0) continue;
      const json* before = ja::child(oldAnnotations, key);
      if (before != nullptr && *before == value) continue;
      const std::string approval = v1::kApproveAnnotationPrefix + key.substr(groupsPrefix.size());
      if (std::find(approvalsWritten.begin(), approvalsWritten.end(), approval) !=
          approvalsWritten.end())
        continue;
      forbidden.push_back("metadata.annotations[" + quoteApprovalPolicy(key) +
                          "]: records the groups of the user who wrote " +
                          quoteApprovalPolicy(approval) +
                          " and is written only with that approval (by the mutating webhook)");
    }
  }
  if (oldAnnotations != nullptr && oldAnnotations->is_object()) {
    for (const auto& [key, value] : oldAnnotations->items()) {
      if (key.compare(0, groupsPrefix.size(), groupsPrefix) != 0) continue;
      if (ja::child(annotations, key) != nullptr) continue;
      const std::string approval = v1::kApproveAnnotationPrefix + key.substr(groupsPrefix.size());
      if (ja::child(annotations, approval) == nullptr) continue;
      invalid.push_back("metadata.annotations[" + quoteApprovalPolicy(key) +
                        "]: cannot be removed while " + quoteApprovalPolicy(approval) +
                        " stands (it records that approver's groups)");
    }
  }
  if (specChanged && approvalAdded) {
    invalid.emplace_back(
        "metadata.annotations: an approval cannot be written together with a change of spec "
        "(it would approve content nobody has seen); change spec and approve in separate writes");
  } else if (specChanged) {
    for (const StagePolicy& p : policies) {
      for (const v1::StageApproval& a : v1::stageApprovals(*r.oldRelease, p.name)) {
        if (ja::child(ja::at(r.release, {"metadata", "annotations"}), a.annotation) == nullptr)
          continue;
        invalid.push_back("metadata.annotations[" + quoteApprovalPolicy(a.annotation) +
                          "]: approves generation " + std::to_string(generation(r.oldRelease)) +
                          " of the spec, which this write changes; remove the approval in the "
                          "same write (an approval is bound to the content it approved)");
      }
    }
  }
}

}  // namespace lockstep::webhooks
