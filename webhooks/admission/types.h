// Shared vocabulary of the admission webhooks: labels, namespace modes,
// the RuntimeEnv view read from the informer cache, operations and verdicts.
// Thread-safety: plain values; copy freely.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/keys.h"
#include "common/status.h"
#include "operator/kube/object.h"

namespace lockstep::webhooks {

// The label and annotation keys admission reads (api/v1alpha1/keys.h).
using api::v1alpha1::kClosureHashAnnotation;
using api::v1alpha1::kEnforceLabel;
using api::v1alpha1::kRuntimeEnvLabel;

// How a namespace wants pod violations handled.
//   kUnset:   namespace not labelled; only pods that declare a RuntimeEnv are
//             checked, in enforce mode (declaring a runtime is opting in).
//   kEnforce: every pod is checked; violations are denied.
//   kWarn:    every pod is checked; violations are admitted with warnings.
//   kAudit:   every pod is checked; violations are admitted and recorded.
//   kOff:     nothing is checked in this namespace (admin escape hatch).
enum class NamespaceMode { kUnset, kEnforce, kWarn, kAudit, kOff };

// Maps the value of the lockstep.dev/enforce label. An empty/absent value is
// kUnset; an unknown value (a typo such as "enforced") fails closed to kEnforce.
NamespaceMode parseNamespaceMode(std::optional<std::string_view> labelValue);
std::string_view namespaceModeName(NamespaceMode m);

// One recorded revision of a RuntimeEnv (status.revisions[]): a pair (image
// by digest, closure hash) and the releases pinning it (docs/contracts.md).
struct RevisionView {
  int64_t number = 0;
  std::string image;
  std::string closureHash;
  std::vector<std::string> pinnedBy = {};  // release names, same namespace
};

// What admission needs to know about a RuntimeEnv, as held by the informer cache.
struct RuntimeEnvView {
  std::string name;
  std::string ns;
  std::string closureHash;      // status.closureHash, "sha256:<hex>" (empty until resolved)
  std::string image;            // spec.image, expected "repo@sha256:<hex>"
  bool ready = false;           // condition Ready == True
  int64_t currentRevision = 0;  // status.currentRevision; 0 = not recorded
  std::vector<RevisionView> revisions = {};  // every recorded revision, ascending number
};

// Looks up RuntimeEnvs by namespace and name. Implementations must be safe to
// call concurrently from the webhook server threads and must not block on the
// network (the operator backs it with its informer cache).
class RuntimeEnvLookup {
 public:
  virtual ~RuntimeEnvLookup() = default;
  virtual std::optional<RuntimeEnvView> find(std::string_view ns, std::string_view name) const = 0;
};

// The prod of a model as the operator's caches see it: the release its Model
// records as prod (status.prod) and the port prod serves on (the Model's
// spec.port, else its Service's, else that release's serving port; 0: unknown).
struct ModelProdView {
  std::string release;
  int64_t port = 0;
  int64_t revision = 0;  // the Model's status.revision (a rollback is asked against it)
};

// Looks up a model's prod; nullopt when the model has no prod yet (no Model,
// or nothing promoted). Same thread-safety contract as RuntimeEnvLookup.
class ModelProdLookup {
 public:
  virtual ~ModelProdLookup() = default;
  virtual std::optional<ModelProdView> prodOf(std::string_view ns,
                                              std::string_view model) const = 0;
};

// The objects a serving pod's owner chain names (api/v1alpha1/serving_pod.h),
// in the pod's namespace: kind "ReplicaSet", "Deployment" or "Model". Null:
// it does not exist; an error: it could not be read (the webhook answers 500).
// Same thread-safety contract as RuntimeEnvLookup; an implementation may read
// the API server for an object its cache has not seen yet.
class ServingObjectLookup {
 public:
  virtual ~ServingObjectLookup() = default;
  virtual StatusOr<kube::ObjectPtr> find(std::string_view ns, std::string_view kind,
                                         const std::string& name) const = 0;
};

// Whether a (cluster-scoped) AnalysisProvider exists, its spec and the
// AnalysisTemplates' specs (nullopt: none of that name). Same contract.
class AnalysisProviderLookup {
 public:
  virtual ~AnalysisProviderLookup() = default;
  virtual bool exists(std::string_view name) const = 0;
  virtual std::optional<nlohmann::json> providerSpec(std::string_view /*name*/) const {
    return std::nullopt;
  }
  virtual std::optional<nlohmann::json> templateSpec(std::string_view /*name*/) const {
    return std::nullopt;
  }
};

// A namespace's labels (who may use which AnalysisProvider). An error: not
// known (the provider rule is then left to the controller). Same contract.
class NamespaceLabelLookup {
 public:
  virtual ~NamespaceLabelLookup() = default;
  virtual StatusOr<std::map<std::string, std::string>> labelsOf(std::string_view ns) const = 0;
};

// Looks up the admission mode of a namespace (from its lockstep.dev/enforce
// label). Same thread-safety contract as RuntimeEnvLookup. An error means the
// mode is not known (e.g. a namespace not yet in the cache and the API server
// unreachable): the pod webhook then answers HTTP 500 and the API server
// applies failurePolicy — never "unlabelled" on a guess (fail closed).
class NamespaceModeLookup {
 public:
  virtual ~NamespaceModeLookup() = default;
  virtual StatusOr<NamespaceMode> modeOf(std::string_view ns) const = 0;
};

enum class Operation { kCreate, kUpdate, kDelete, kConnect, kUnknown };
Operation parseOperation(std::string_view s);
// "CREATE", "UPDATE", ... "UNKNOWN" (bounded set: safe as a metrics label).
std::string_view operationName(Operation op);

// Outcome of one admission request, also the `decision` metrics label.
enum class Decision { kAllowed, kDenied, kWarned, kAudited, kError };
std::string_view decisionName(Decision d);

// The result of a validator: what to answer and why.
struct Verdict {
  Decision decision = Decision::kAllowed;
  int code = 200;       // status.code when denied (403 / 422 / 400)
  std::string reason;   // status.reason when denied (Forbidden / Invalid / BadRequest)
  std::string message;  // status.message (denied) or audit annotation (audited)
  std::vector<std::string> warnings;    // AdmissionReview warnings
  std::vector<std::string> violations;  // the individual problems, for tests and logs
  bool checked = false;                 // false when the policy did not apply to the object
  std::string patch;  // a JSON Patch to apply when allowed (mutating webhooks); "" = none

  bool allowed() const { return decision != Decision::kDenied && decision != Decision::kError; }
};

}  // namespace lockstep::webhooks
