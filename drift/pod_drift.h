// Drift of running pods (docs/supply-chain.md "Drift of running pods"): pods
// that run something their RuntimeEnv does not record. Admission checks a pod
// once, when it is created; a pod admitted in warn or audit mode, before
// Lockstep was installed, or on a revision pruned since runs on unchecked.
// The scan reads the pods and RuntimeEnvs the operator already caches, and
// reports what it finds as a PolicyReport per namespace (wgpolicyk8s.io/v1alpha2)
// where that kind exists, else as Events and a metric.
//
// What is drift (a pod under policy: labelled lockstep.dev/runtime-env, or in a
// namespace whose lockstep.dev/enforce mode is enforce, warn or audit):
//  - kNoRuntimeEnv: the pod declares no RuntimeEnv in a namespace under policy;
//  - kUnknownRuntimeEnv: the RuntimeEnv it names does not exist;
//  - kPrunedRevision: its closure hash is no recorded revision's and the revision
//    it says it was built from (annotation lockstep.dev/runtime-revision) was
//    pruned from the RuntimeEnv;
//  - kUnrecordedPair: its closure hash is no recorded revision's (or it has none);
//  - kForeignImage: a revision records its closure hash, but a container runs an
//    image that is not that revision's (by normalized repository and digest);
//  - kUnpinnedVolume: an image volume not pinned by digest.
// Not drift: a pod on any revision the RuntimeEnv still records, current or
// older, pinned or not (admission decides which of those a new pod may use;
// a running pod on a recorded pair runs exactly what was locked), and the
// operator's verification init containers on the trusted CLI image.
// Pure. Thread-safety: values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "webhooks/admission/types.h"

namespace lockstep::drift {

enum class DriftKind {
  kNoRuntimeEnv,
  kUnknownRuntimeEnv,
  kPrunedRevision,
  kUnrecordedPair,
  kForeignImage,
  kUnpinnedVolume,
};

// The rule name of a kind in reports and metrics ("no-runtime-env", …).
std::string_view driftKindName(DriftKind kind);

struct DriftFinding {
  std::string pod;         // metadata.name
  std::string uid;         // metadata.uid
  std::string runtimeEnv;  // the label's value ("" = none)
  DriftKind kind = DriftKind::kUnrecordedPair;
  std::string message;  // what the pod runs and what the RuntimeEnv records
};

// One namespace's pods against their RuntimeEnvs.
struct NamespaceScan {
  std::string ns;
  webhooks::NamespaceMode mode = webhooks::NamespaceMode::kUnset;
  int64_t checked = 0;                 // pods under policy
  std::vector<DriftFinding> findings;  // sorted by pod name, then kind
};

using RuntimeEnvFinder =
    std::function<std::optional<webhooks::RuntimeEnvView>(std::string_view name)>;

// Every drift of one pod (empty: none, or the pod is not under policy). `pod` may
// be masked to drift::podFieldMask(). `trustedInitImage`: the operator's
// --cli-image ("" = none).
std::vector<DriftFinding> podDrift(const nlohmann::json& pod, webhooks::NamespaceMode mode,
                                   const RuntimeEnvFinder& findEnv,
                                   const std::string& trustedInitImage);

// The pods of one namespace. Pods that have finished (status.phase Succeeded or
// Failed) and pods being deleted are skipped: they run nothing any more.
NamespaceScan scanNamespace(const std::string& ns, webhooks::NamespaceMode mode,
                            const std::vector<const nlohmann::json*>& pods,
                            const RuntimeEnvFinder& findEnv, const std::string& trustedInitImage);

// The fields of a pod the scan reads: the pod admission mask plus uid, phase and
// deletionTimestamp. Cache pods through it.
const nlohmann::json& podFieldMask();

// The PolicyReport (wgpolicyk8s.io/v1alpha2) of one scan: one `fail` result per
// finding (policy "lockstep-runtime", rule = the kind's name, the pod as its
// resource, severity high for foreign images and unrecorded pairs, medium
// otherwise), a summary that counts the pods that passed, and no timestamps
// that change while nothing else does: `since` is when each finding was first
// seen (seconds since the epoch, kept by the caller across scans). At most
// `maxResults` results; past it the report says how many it left out
// (property "truncated") and the summary still counts every pod.
inline constexpr const char* kReportName = "lockstep-runtime-drift";
inline constexpr const char* kPolicyName = "lockstep-runtime";
nlohmann::json policyReport(const NamespaceScan& scan,
                            const std::map<std::string, int64_t>& sinceByFinding,
                            int64_t nowSeconds, size_t maxResults = 1000);

// The key of a finding across scans ("<pod uid>/<kind>"), kept in each result's
// properties ("finding") so a restarted operator keeps the first-seen times.
std::string findingKey(const DriftFinding& f);

// The first-seen times a report that stands records, by finding key.
std::map<std::string, int64_t> sinceOf(const nlohmann::json& report);

}  // namespace lockstep::drift
