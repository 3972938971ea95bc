// AnalysisProvider (cluster-scoped, lockstep.dev/v1alpha1): a Prometheus the
// platform lets canary analysis query (Argo Rollouts' ClusterAnalysisTemplate
// and Flagger's MetricTemplate play the same part). A release names a
// provider and gives only the query; the address, the CA, the bearer token and
// the limits belong to whoever may write cluster-scoped objects (docs/rollouts.md
// "Analysis providers", docs/security.md "Server-side request forgery").
//
// The one decoder of an AnalysisProvider: every error names the field
// ("spec.address: ...").
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/label_selector.h"
#include "api/v1alpha1/meta.h"
#include "common/status.h"

namespace lockstep::api::v1alpha1 {

// A key of a ConfigMap or Secret in the operator's namespace.
struct KeyRef {
  std::string name;
  std::string key;
};

inline constexpr int64_t kDefaultProviderTimeoutSeconds = 10;
inline constexpr int64_t kMaxProviderTimeoutSeconds = 120;
inline constexpr int64_t kDefaultProviderConcurrency = 4;
inline constexpr int64_t kMaxProviderConcurrency = 64;
inline constexpr const char* kDefaultCaKey = "ca.crt";
inline constexpr const char* kDefaultTokenKey = "token";

// Ready's reasons (status.conditions of an AnalysisProvider).
inline constexpr const char* kReasonProviderAnswering = "Answering";
inline constexpr const char* kReasonProviderProbing = "Probing";
inline constexpr const char* kReasonProviderInvalidSpec = "InvalidSpec";
inline constexpr const char* kReasonProviderCAUnavailable = "CAUnavailable";
inline constexpr const char* kReasonProviderTokenUnavailable = "TokenUnavailable";
inline constexpr const char* kReasonProviderQueryFailed = "QueryFailed";

struct AnalysisProviderSpec {
  std::string address;  // https://host:port[/prefix]; http only with allowInsecureHttp
  bool allowInsecureHttp = false;
  std::string caBundle;  // inline PEM; or caConfigMapRef; neither: the system roots
  std::optional<KeyRef> caConfigMapRef;
  std::optional<KeyRef> bearerTokenSecretRef;
  int64_t timeoutSeconds = kDefaultProviderTimeoutSeconds;
  int64_t maxConcurrentQueries = kDefaultProviderConcurrency;
  // Who may use it: the namespaces whose labels match. Absent: none ({}: every
  // namespace). A release in another namespace is refused at apply and its
  // measurements are errors (docs/rollouts.md "Providers scoped to tenants").
  std::optional<LabelSelector> namespaceSelector;
  // A release may give its own `query`; otherwise only an AnalysisTemplate.
  bool allowFreeFormQueries = false;
};

// Whether a release in a namespace labelled `nsLabels` may use the provider.
bool providerServes(const AnalysisProviderSpec& spec,
                    const std::map<std::string, std::string>& nsLabels);
// Why it may not, for a release in namespace `ns` (messages and refusals).
std::string providerRefusal(const std::string& provider, const AnalysisProviderSpec& spec,
                            const std::string& ns);

struct AnalysisProvider {
  ObjectMeta meta;
  std::string resourceVersion;
  nlohmann::json spec = nlohmann::json::object();
  nlohmann::json status = nlohmann::json::object();
};

AnalysisProvider decodeAnalysisProviderObject(const nlohmann::json& object);

// The spec checked: InvalidArgument naming the field ("spec.timeout: ...").
StatusOr<AnalysisProviderSpec> decodeAnalysisProviderSpec(const nlohmann::json& spec);

}  // namespace lockstep::api::v1alpha1
