// ModelRelease admission policy (what CEL in the CRD schema cannot express, or
// cannot express with good messages). Pure function of the object, its old
// version on UPDATE, and the referenced RuntimeEnv as seen by the caller.
// Rules, each violation reported with its field path:
//  - spec.package is repo@sha256:<64 hex>; spec.closureHash is sha256:<64 hex>;
//    spec.runtimeEnvRef.name is set.
//  - spec.model is a DNS-1035 label of at most 56 characters.
//  - UPDATE: spec.package, spec.runtimeEnvRef.name and spec.closureHash are
//    immutable; once the release has left Pending, spec.model and spec.stages
//    too (release_immutability.h). The stage list is re-validated only when it
//    changed, so metadata updates (finalizers, annotations) of old objects
//    never fail.
//  - The creator annotation, approval policies, separation of duties and
//    approvals bound to their content: approval_policy.h.
//  - spec.stages: at least one; names DNS labels and unique; each stage has
//    exactly one of `gate` (a gate stage) or `serving` (the prod stage); the
//    names eval/ci are reserved for gate stages and prod for the serving
//    stage; at most one serving stage and it comes last; canary step weights
//    are in 1..100 and strictly increasing.
//  - Pod templates (spec.stages[].gate.template, .serving.template): a
//    container or init container that sets `image` must name the RuntimeEnv's
//    spec.image (same normalized repository and digest); one without an image
//    is fine (the controller fills it in). Checked with the stage list (so
//    only when it changed on UPDATE). Without the RuntimeEnv a pinned image
//    is admitted with a warning, an unpinned one denied (it can never match).
//  - Canary analyses whose query's range window is longer than their
//    initialDelay: a warning each (analysis_advice.h). An analysis giving
//    `prometheus.address` (not a provider) is denied unless
//    allowPrometheusAddress (the operator's --allow-release-prometheus-address).
//  - The Service port belongs to the model: while another release runs the
//    model's prod (`prod`), a serving stage whose port differs from prod's is
//    denied naming spec.stages[i].serving.port, prod's port and release.
//    Checked with the stage list.
//  - An analysis naming an AnalysisProvider that `providers` does not know: a
//    warning (still admitted: GitOps may create the provider after it).
//    One that exists: denied, naming the provider, when its
//    spec.namespaceSelector does not match the namespace's labels, or when the
//    analysis gives a free-form `query` and the provider does not allow them
//    (spec.allowFreeFormQueries). A `template` naming an AnalysisTemplate:
//    its `args` checked against the template's declarations (denied naming
//    ...prometheus.args.<name>); a template that does not exist: a warning.
//  - RuntimeEnv: absent or not Ready → allowed with a warning; Ready with a
//    different status.closureHash → denied on CREATE, a warning on UPDATE
//    (an existing release whose RuntimeEnv moved on is stale, not invalid).
//  - Approvals and abort (release_actions.h): every approve.lockstep.dev/<stage>
//    or lockstep.dev/abort annotation the write adds or changes must have the
//    requesting user's name as value, name a stage of the release (approve),
//    and be allowed by the authorizer for the verb approve/abort on
//    modelreleases.lockstep.dev. The caller asks the authorizer for
//    verbsToAuthorize() and passes the answers in `access`; a verb without an
//    answer, or whose check failed, is refused (fail closed).
//  - Registry stage tags (docs/security.md "The registry Secret"): a release
//    naming a Secret in spec.registryTags.secretRef.name (on CREATE, and on an
//    UPDATE that changes the name or turns the tags on) makes the operator
//    push with that Secret's credentials, so its author must be allowed to
//    `get` that Secret: the caller asks the authorizer for
//    secretAccessRequestFor() and passes the answer in `secretAccess`; no
//    answer, a failed check or a "no" is refused naming the Secret and the verb.
// Denials are 422 Invalid, or 403 Forbidden when the only problems are
// approval/abort permissions (forged name, RBAC verb missing, check failed).
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "api/v1alpha1/approval.h"
#include "webhooks/admission/authorizer.h"
#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

struct ModelReleaseReview {
  Operation operation = Operation::kCreate;
  std::string ns;
  std::string name;                            // request.name (empty with generateName)
  std::string subResource;                     // "status" updates are not checked
  const nlohmann::json* release = nullptr;     // request.object
  const nlohmann::json* oldRelease = nullptr;  // request.oldObject (UPDATE)
  std::optional<RuntimeEnvView> runtimeEnv;    // the RuntimeEnv named by spec.runtimeEnvRef
  UserInfo user;                               // request.userInfo
  bool allowPrometheusAddress = false;         // --allow-release-prometheus-address
  api::v1alpha1::ApprovalRules approvalRules;  // --allow-service-account-approvers
  // The prod of spec.model (nullopt: none yet, or not looked up).
  std::optional<ModelProdView> prod;
  // The AnalysisProviders and AnalysisTemplates; null: not looked up (no warning).
  const AnalysisProviderLookup* providers = nullptr;
  // The release namespace's labels (a provider's spec.namespaceSelector);
  // nullopt: not known (the controller checks at measurement time).
  std::optional<std::map<std::string, std::string>> namespaceLabels;
  // Authorizer answers by verb ("approve", "abort") for verbsToAuthorize().
  std::map<std::string, StatusOr<AccessDecision>, std::less<>> access;
  // The authorizer's answer for secretAccessRequestFor() (nullopt: not asked).
  std::optional<StatusOr<AccessDecision>> secretAccess;
};

// spec.runtimeEnvRef.name, when set.
std::optional<std::string> modelReleaseRuntimeEnvName(const nlohmann::json& release);

// The RBAC verbs the write needs: those of added/changed action annotations
// that pass the other checks (value is the user's name, the stage exists).
std::set<std::string> verbsToAuthorize(const ModelReleaseReview& review);

// The SubjectAccessReview question for `verb` on the reviewed release.
AccessRequest accessRequestFor(const ModelReleaseReview& review, std::string_view verb);

// The question "may the requesting user get the Secret spec.registryTags.secretRef
// names?" when the write needs it asked; nullopt otherwise.
std::optional<AccessRequest> secretAccessRequestFor(const ModelReleaseReview& review);

Verdict validateModelRelease(const ModelReleaseReview& review);

}  // namespace lockstep::webhooks
