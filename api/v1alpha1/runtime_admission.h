// RuntimeAdmission (lockstep.dev/v1alpha1): the table of admissible (image,
// closure hash) pairs of every RuntimeEnv in a namespace, read as params by the
// pod ValidatingAdmissionPolicy (helm/lockstep/templates/pod-policy.yaml;
// docs/security.md "Admission inside the API server"). The operator derives it
// from the RuntimeEnvs' status: the current revision (admits any pod while the
// RuntimeEnv is Ready) and every pinned revision (admits the pods of the
// releases that pin it), with each image split into its normalised repository
// and digest so that CEL compares strings only.
// Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/runtime_env.h"
#include "common/status.h"

namespace lockstep::api::v1alpha1 {

// The one table of a namespace (the policy bindings' paramRef.name).
inline constexpr const char* kRuntimeAdmissionName = "lockstep-runtimes";
// Bounds (crds/lockstep.dev_runtimeadmissions.yaml says the same): RuntimeEnvs per
// namespace, admitting revisions per RuntimeEnv, releases pinning one revision, and
// the table's encoded size. An etcd object may hold 1.5 MiB; the API server
// evaluates the policy on every pod create, so the table stays far below that.
// Pins per revision: after a lock edit every model in prod pins the revision before
// it (the Model's record pins what prod runs), so a namespace of a few hundred
// models has that many; the byte bound is the one a namespace meets first.
inline constexpr size_t kRuntimeAdmissionMaxEnvs = 128;
inline constexpr size_t kRuntimeAdmissionMaxRevisions = 32;
inline constexpr size_t kRuntimeAdmissionMaxPinsPerRevision = 1024;
inline constexpr size_t kRuntimeAdmissionMaxBytes = 512 * 1024;

// The table's spec for the RuntimeEnvs of one namespace. kResourceExhausted naming
// the namespace, the count and the bound when a bound is passed (the operator then
// keeps the last table it wrote and says so in an Event).
StatusOr<nlohmann::json> runtimeAdmissionSpec(const std::string& ns,
                                              const std::vector<RuntimeEnv>& envs,
                                              const std::string& trustedInitImage);

}  // namespace lockstep::api::v1alpha1
