// The model's serving objects (pure, docs/rollouts.md "Ownership"): the
// Service `<model>` selecting both tracks (the weight is the replica ratio)
// and a Deployment `<model>-<track>` per track, built from a release's serving
// template by the one pod rule of runtime_pod.h, owned by the Model (its
// controller owner reference) so deleting a release never takes prod down.
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model_release.h"
#include "common/status.h"
#include "controllers/modelrelease/runtime_pod.h"

namespace lockstep::controllers {

using api::v1alpha1::CapacityMode;

// What a serving pod runs: the release and its pinned runtime pair (status.runtime).
struct ServingRelease {
  std::string release, package, closureHash, runtimeEnv, runtimeImage;
  nlohmann::json podTemplate;              // serving.template of that release
  int64_t runtimeRevision = 0;             // the pinned revision's number; 0: none recorded
  std::optional<VerifyContainers> verify;  // RuntimeEnv spec.verify.onStart (runtime_pod.h)
};

struct ServingObjectsInput {
  std::string model, ns;
  int port = 8080;
  CapacityMode capacity = CapacityMode::kSurge;
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // InitContainer mode
  // The Model `<model>` that owns the serving objects (docs/rollouts.md
  // "Ownership"); empty uid: no owner yet.
  std::string modelUid;
  std::string serviceType = "ClusterIP";  // the Model's spec.service.type
  // The Service selects on the serving label as well (docs/rollouts.md "Which
  // pods are prod"): once no ReplicaSet of the model's Deployments that has or
  // wants pods lacks it in its template (servingLabelSelectable, ownership.h);
  // until then a pod an earlier version built keeps its traffic.
  bool selectServingLabel = true;
};

inline constexpr const char* kTrackStable = "stable";
inline constexpr const char* kTrackCanary = "canary";
using api::v1alpha1::kModelLabel;
using api::v1alpha1::kTrackLabel;

std::string servingDeploymentName(const std::string& model, const std::string& track);

// Service `<model>` selecting both tracks (weight = replica ratio).
nlohmann::json buildModelService(const ServingObjectsInput& in);

// Whether `current` (the Service as the API server holds it) already carries every
// label, owner reference and spec field of `want` (buildModelService): applying `want`
// again would change nothing, so the planner writes nothing. An edited or foreign-owned
// field is missing or differs, and the next reconcile puts it back.
bool serviceHolds(const nlohmann::json& want, const nlohmann::json& current);

// Deployment `<model>-<track>`; kInvalidArgument naming what when the template cannot run.
StatusOr<nlohmann::json> buildServingDeployment(const ServingObjectsInput& in,
                                                const std::string& track, const ServingRelease& r,
                                                int replicas);

// The Deployment annotation (its metadata, never the pod template's: writing
// it restarts no pod) naming the pod template Lockstep applied: templateHash
// of it.
inline constexpr const char* kTemplateHashAnnotation = "lockstep.dev/template-hash";

// "sha256:<64 hex>" over the canonical JSON of what Lockstep sets in the pod
// template `tmpl` as buildServingDeployment builds it (before the API server
// defaults anything): its labels, annotations and spec, but for what the
// operator's own settings add (the verification init containers and volumes,
// the package fetch init container, the package volume's form): an operator
// upgrade that changes only those changes no hash. The package reference is
// in it (the lockstep.dev/package annotation).
std::string templateHash(const nlohmann::json& tmpl);

// How `current` (the live Deployment) differs from `desired` (as
// buildServingDeployment builds it) in what Lockstep sets: spec.replicas,
// every template label and annotation Lockstep sets (but the serving label: a
// template an earlier version built keeps its pods until the next release
// re-templates it), each container's name and image (in order), the package
// the pods mount (the image volume's reference, or the fetch init
// container's LOCKSTEP_PACKAGE), and every other field Lockstep sets in the
// pod spec (the LOCKSTEP_* env, command, args, probes, ports, volumeMounts,
// volumes, the template's own init containers, ...): each must be in the live
// template with the same value ("contains": what the API server defaults,
// e.g. imagePullPolicy, and fields someone added are no drift; a list of
// named items is matched by name or mountPath, a list of values whole; a
// zero value Lockstep sets may be absent, the API server omits it). Not
// compared: `resources` (the API server rewrites quantities: 0.5 is 500m),
// the init containers and volumes the operator's own settings add, and the
// owner reference (ownership.h's: without the Model's, it is not Lockstep's).
// The package volume is compared by the package it carries in either mount
// mode, and in the fetch form only as the operator builds it (an emptyDir, the
// fetch init container on the runtime image with `fetchCommand`, the
// operator's --package-fetch-command, and no args; desired's own fetch
// container when it has one).
// "" when it matches; else what differs, e.g. "spec.replicas is 0, not 2".
std::string deploymentDrift(const nlohmann::json& desired, const nlohmann::json& current,
                            const std::vector<std::string>& fetchCommand);

// The merge patch recording `desired`'s kTemplateHashAnnotation on `current`
// when it is missing or another (a Deployment an earlier version built, or one
// whose template holds what Lockstep builds now): metadata only, no pod
// restarts. nullopt when it is there. Meant for a Deployment without drift.
std::optional<nlohmann::json> templateHashPatch(const nlohmann::json& desired,
                                                const nlohmann::json& current);

// The same for the Service (buildModelService): "" when serviceHolds; else
// its selector or ports' port and targetPort named, or its labels, type or
// owner references.
std::string serviceDrift(const nlohmann::json& desired, const nlohmann::json& current);

}  // namespace lockstep::controllers
