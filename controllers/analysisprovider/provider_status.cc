#include "controllers/analysisprovider/provider_status.h"

#include "api/v1alpha1/analysis_provider.h"
#include "api/v1alpha1/conditions.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using nlohmann::json;

json providerStatus(const ProviderObserved& o) {
  json status = o.status.is_object() ? o.status : json::object();
  json conditions = status.value("conditions", json::array());
  kube::Condition ready{v1::kConditionReady, "True", v1::kReasonProviderAnswering, ""};
  auto notReady = [&](const char* reason, const std::string& message) {
    ready = {v1::kConditionReady, "False", reason, message};
  };
  if (!o.spec.isOk()) {
    notReady(v1::kReasonProviderInvalidSpec, o.spec.message());
  } else if (!o.ca.isOk()) {
    notReady(v1::kReasonProviderCAUnavailable, o.ca.message());
  } else if (!o.token.isOk()) {
    notReady(v1::kReasonProviderTokenUnavailable, o.token.message());
  } else if (!o.client.isOk()) {
    notReady(v1::kReasonProviderInvalidSpec, o.client.message());
  } else if (o.probe && (!o.probe->error.empty() || !o.probe->value)) {
    notReady(v1::kReasonProviderQueryFailed,
             "the health check vector(1) failed: " +
                 (o.probe->error.empty() ? std::string("no value") : o.probe->error) +
                 "; canary analysis on this provider counts errors");
  } else if (o.probe) {
    ready.message = "the health check vector(1) answered";
  } else {
    // No answer yet: keep what the last probe said, or Unknown the first time.
    if (auto last = kube::findCondition(conditions, v1::kConditionReady)) {
      ready = {v1::kConditionReady, last->value("status", "Unknown"),
               last->value("reason", v1::kReasonProviderProbing), last->value("message", "")};
    } else {
      ready = {v1::kConditionReady, "Unknown", v1::kReasonProviderProbing,
               "the health check vector(1) is in flight"};
    }
  }
  kube::setCondition(conditions, ready, o.generation, o.now);
  status["conditions"] = conditions;
  status["observedGeneration"] = o.generation;
  if (o.stats) {
    status["queries"] = {{"succeeded", o.stats->succeeded},
                         {"failed", o.stats->failed},
                         {"timedOut", o.stats->timedOut},
                         {"inFlight", o.stats->inFlight},
                         {"queued", o.stats->queued}};
  } else {
    status.erase("queries");
  }
  return status;
}

}  // namespace lockstep::controllers
