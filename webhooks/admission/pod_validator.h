// Pod admission policy: a pod runs only on the runtime closure it declares.
//
// Pure function of the pod (and its old version on UPDATE), the RuntimeEnv the
// pod names (looked up by the caller), and the namespace mode. Rules:
//  - Subject pods: pods labelled lockstep.dev/runtime-env, and every pod in a
//    namespace whose mode is enforce|warn|audit (a pod there without the label
//    is a violation: it must declare a RuntimeEnv). Mode off: nothing checked.
//  - CREATE: the pod runs an admissible revision of the RuntimeEnv (a pair
//    image by digest, closure hash; docs/contracts.md): either the current one
//    — the RuntimeEnv is Ready, annotation lockstep.dev/closure-hash equals its
//    status.closureHash, every container, init container and ephemeral
//    container image is pinned by digest to its image (same normalized
//    repository and same digest) — or a pinned revision (status.revisions[]
//    with pinnedBy) whose pair the pod's annotation and images are, when the
//    pod's lockstep.dev/release label names a release in that revision's
//    pinnedBy. A refusal names what the pod claims and the current and pinned
//    revisions (and a pruned revision the pod's lockstep.dev/runtime-revision
//    annotation names). Every image volume (volumes[].image.reference, e.g.
//    the checkpoint package) is pinned by digest.
//  - UPDATE (including the ephemeralcontainers subresource): a running pod was
//    admitted already, so only what the update introduces is checked: ephemeral
//    containers that are new (by name), containers whose image changed, a
//    changed closure-hash annotation (each against the admissible revisions as
//    on CREATE). A changed runtime-env label re-validates
//    the whole pod as on CREATE; removing it is a violation (the pod would
//    escape the policy for its next image swap). Updates that introduce nothing (status,
//    labels, finalizers) are never blocked, even if the RuntimeEnv moved on.
//  - The operator's verification containers (docs/verify.md, "Admission"): an
//    init container whose image is exactly `trustedInitImage` (the operator's
//    --cli-image, which the webhook accepts only pinned by digest) is not
//    checked against the RuntimeEnv. Only init containers: a main or ephemeral
//    container on that image is checked as any other. Everything else (the
//    main containers on the runtime's image and closure, image volumes pinned
//    by digest, so the runtime image mounted by digest) is checked as above.
//  - DELETE / CONNECT: not checked.
//  - Fail closed: a CREATE or UPDATE whose object is missing or not a JSON
//    object is a violation in every mode but off (the pod can prove neither
//    that it is outside the policy nor that it matches its RuntimeEnv).
// Modes: enforce → deny (403 Forbidden); warn → allow with one warning per
// violation; audit → allow, decision kAudited, message kept for the audit log.
// Thread-safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

struct PodReview {
  Operation operation = Operation::kCreate;
  std::string ns;                          // request.namespace
  const nlohmann::json* pod = nullptr;     // request.object
  const nlohmann::json* oldPod = nullptr;  // request.oldObject (UPDATE)
  NamespaceMode mode = NamespaceMode::kUnset;
  std::optional<RuntimeEnvView> runtimeEnv;  // the RuntimeEnv named by the pod's label
  // The operator's CLI image, repo@sha256:… ("" = none): init containers on
  // exactly this reference run verify-env / verify-host and are admitted.
  std::string trustedInitImage;
};

// OK when `image` may be trusted as the verification init containers' image:
// pinned by digest (a tag can be moved to any image). kInvalidArgument naming
// the reference otherwise.
Status checkTrustedInitImage(const std::string& image);

// Every field of a pod that validatePod, podRuntimeEnvName and the pod webhook's
// logging read (a FieldMask, webhooks/admission/admission_review.h): the pod
// webhook decodes only these. A new read of the pod must be added here; the
// handler tests compare verdicts on whole and masked pods.
const nlohmann::json& podFieldMask();

// The RuntimeEnv name a pod declares (its lockstep.dev/runtime-env label).
std::optional<std::string> podRuntimeEnvName(const nlohmann::json& pod);

Verdict validatePod(const PodReview& review);

}  // namespace lockstep::webhooks
