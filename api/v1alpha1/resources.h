// The API resources Lockstep serves (group lockstep.dev, version v1alpha1)
// and the core resources its controllers and webhooks read: one place for
// every side (controllers, webhooks, CLI) to name a kind.
// Thread-safety: constants.
#pragma once

#include "operator/kube/resource.h"

namespace lockstep::api::v1alpha1 {

inline constexpr const char* kGroup = "lockstep.dev";
inline constexpr const char* kVersion = "v1alpha1";

inline const kube::Resource kRuntimeEnvs{kGroup, kVersion, "runtimeenvs", "RuntimeEnv", true};
inline const kube::Resource kModelReleases{kGroup, kVersion, "modelreleases", "ModelRelease", true};
// The pod policy's params: one table per namespace, written by the operator
// (api/v1alpha1/runtime_admission.h).
inline const kube::Resource kRuntimeAdmissions{kGroup, kVersion, "runtimeadmissions",
                                               "RuntimeAdmission", true};
// The owner of a model's prod and its record (api/v1alpha1/model.h).
inline const kube::Resource kModels{kGroup, kVersion, "models", "Model", true};
// On the hub: one package promoted to a fleet in waves (api/v1alpha1/model_rollout.h).
inline const kube::Resource kModelRollouts{kGroup, kVersion, "modelrollouts", "ModelRollout", true};
// Cluster-scoped: written by the platform (api/v1alpha1/analysis_provider.h).
inline const kube::Resource kAnalysisProviders{kGroup, kVersion, "analysisproviders",
                                               "AnalysisProvider", false};
// Cluster-scoped: the platform's PromQL templates (api/v1alpha1/analysis_template.h).
inline const kube::Resource kAnalysisTemplates{kGroup, kVersion, "analysistemplates",
                                               "AnalysisTemplate", false};
// Cluster-scoped: which key signs which packages' evidence (api/v1alpha1/signing_config.h).
inline const kube::Resource kSigningConfigs{kGroup, kVersion, "signingconfigs", "SigningConfig",
                                            false};
// Cluster-scoped: whose evidence is accepted for which packages and stages
// (api/v1alpha1/trust_policy.h).
inline const kube::Resource kTrustPolicies{kGroup, kVersion, "trustpolicies", "TrustPolicy", false};
// On the hub: the fleet's clusters (SIG Multicluster's ClusterProfile, KEP-4322), read
// when the API exists as the inventory of ModelRollouts' selectors.
inline const kube::Resource kClusterProfiles{"multicluster.x-k8s.io", "v1alpha1", "clusterprofiles",
                                             "ClusterProfile", true};

// Core kinds Lockstep reads or writes.
using kube::resources::kConfigMaps;
using kube::resources::kDeployments;
using kube::resources::kEvents;
using kube::resources::kJobs;
using kube::resources::kLeases;
using kube::resources::kNamespaces;
using kube::resources::kNodes;
using kube::resources::kPods;
using kube::resources::kReplicaSets;
using kube::resources::kSecrets;
using kube::resources::kServices;
using kube::resources::kValidatingWebhookConfigurations;

}  // namespace lockstep::api::v1alpha1
