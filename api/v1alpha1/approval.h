// Who may approve a ModelRelease stage, and whether a stage is approved: the
// one reading of `spec.stages[].approval` and of the approval annotations,
// shared by the webhook (which refuses what breaks these rules) and the
// controller (which acts only on what the webhook could have checked).
// docs/modelrelease.md "Approvals" is the contract:
//   approval: Automatic | Manual                  (Manual: one approver)
//   approval: {policy: Manual, minApprovers: N, allowSelfApproval: false,
//              fromGroups: [ml-leads]}
//   approve.lockstep.dev/<stage>: <user>          the first approver
//   approve.lockstep.dev/<stage>.<k>: <user>      more approvers (k = 2, 3, ...)
//   approver-groups.lockstep.dev/<stage>[.<k>]: ["ml-leads","system:authenticated"]
//                                                 that approver's groups, as the API
//                                                 server authenticated them (written by
//                                                 the mutating webhook, checked by the
//                                                 validating one)
//   lockstep.dev/created-by: <user>               the creator, as the webhook checked it
// The creator never counts as an approver unless allowSelfApproval is true;
// a user counts once however many keys carry their name. A ServiceAccount
// (system:serviceaccount:NS:NAME) never counts unless the platform allows it
// (ApprovalRules; the chart value approvals.allowServiceAccounts): whoever may
// create a ServiceAccount in a namespace can mint as many "approvers" as they like.
// A stage with fromGroups counts only approvers whose recorded groups include
// one of them (an approval without recorded groups never counts there).
// Thread-safety: pure functions and constants.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::api::v1alpha1 {

// The creator of a release: set on CREATE by the mutating webhook from the
// request's userInfo (webhooks/admission/creator_patch.h); a value the client
// wrote is left alone, and the validating webhook refuses a CREATE whose value
// is not the requesting user and any UPDATE that changes it.
inline constexpr const char* kCreatedByAnnotation = "lockstep.dev/created-by";

// The groups of the user who wrote approve.lockstep.dev/<stage>[.<k>], as the
// API server authenticated them (request.userInfo.groups, a JSON array of
// strings): written by the mutating webhook next to each approval it admits
// (creator_patch.h), checked by the validating webhook, never a client's.
inline constexpr const char* kApproverGroupsAnnotationPrefix =
    "approver-groups.lockstep.dev/";  // + the approval key's suffix

inline constexpr int kMaxApprovers = 10;
inline constexpr int kMaxFromGroups = 10;

struct ApprovalPolicy {
  bool manual = false;
  int minApprovers = 1;
  bool allowSelfApproval = false;
  // Only approvers in one of these groups count (empty: any approver).
  std::vector<std::string> fromGroups;
  bool objectForm = false;  // written as {policy: ...}
};

// Decodes `stage.approval` (absent: Automatic). On bad input returns an error
// naming `where` + ".approval" and what is wrong.
std::optional<std::string> decodeApprovalPolicy(const nlohmann::json& stage,
                                                const std::string& where, ApprovalPolicy& out);

// One approval annotation of a stage.
struct StageApproval {
  std::string annotation;  // the full key
  std::string user;        // its value ("" when not a string)
  // The approver's groups from its approver-groups.lockstep.dev/ annotation;
  // groupsRecorded is false when there is none or it does not decode.
  std::vector<std::string> groups;
  bool groupsRecorded = false;
};

// "approve.lockstep.dev/ci.2" -> "approver-groups.lockstep.dev/ci.2" ("" for a
// key that is not an approval's).
std::string approverGroupsKey(const std::string& approvalKey);

// The annotation value recording `groups`: a compact JSON array of strings.
std::string encodeApproverGroups(const std::vector<std::string>& groups);

// The groups in an approver-groups value; nullopt unless it is a JSON array of strings.
std::optional<std::vector<std::string>> decodeApproverGroups(const std::string& value);

// True when `groups` holds one of `fromGroups`.
bool inAnyGroup(const std::vector<std::string>& groups, const std::vector<std::string>& fromGroups);

// Splits the part after approve.lockstep.dev/ into the stage and the slot:
// "ci" -> {"ci", 1}; "ci.2" -> {"ci", 2}. nullopt for a malformed slot
// ("ci.", "ci.0", "ci.x", "ci.1", a slot above kMaxApprovers).
struct ApprovalKey {
  std::string stage;
  int slot = 1;
};
std::optional<ApprovalKey> parseApprovalKey(const std::string& suffix);

// The approval annotations of `release` for `stage`, sorted by key.
std::vector<StageApproval> stageApprovals(const nlohmann::json& release, const std::string& stage);

// The recorded creator (the kCreatedByAnnotation value), "" when absent.
std::string releaseCreator(const nlohmann::json& release);

// The platform's rules for every release (operator flags, chart values).
struct ApprovalRules {
  // --allow-service-account-approvers: ServiceAccounts may approve and count toward
  // minApprovers (weakens separation of duties; docs/security.md).
  bool serviceAccountsApprove = false;
};

// True for a ServiceAccount's user name (system:serviceaccount:NS:NAME).
bool isServiceAccountUser(const std::string& user);

// An approver that counts, with the groups recorded for its approval.
struct CountedApprover {
  std::string user;
  std::vector<std::string> groups;
  bool groupsRecorded = false;
};

struct ApprovalDecision {
  bool approved = false;
  std::vector<std::string> approvers;    // distinct users that count, in key order
  std::vector<CountedApprover> counted;  // the same users, with their groups
  std::string message;                   // what is missing, for status and Events
};

// Whether `approvals` satisfy `policy` for a release created by `creator`.
ApprovalDecision decideApproval(const ApprovalPolicy& policy,
                                const std::vector<StageApproval>& approvals,
                                const std::string& creator, const ApprovalRules& rules = {});

}  // namespace lockstep::api::v1alpha1
