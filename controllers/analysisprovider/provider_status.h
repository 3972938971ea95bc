// The status of an AnalysisProvider (pure): Ready from what its controller
// found (the spec, the CA bundle, the token Secret) and the answer of its
// health-check query (`vector(1)` once a minute on the provider's own queue),
// plus the query counters of this operator replica. Secrets never reach it:
// the messages name the Secret and key, never the value.
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "controllers/modelrelease/prod/query_scheduler.h"

namespace lockstep::controllers {

struct ProviderObserved {
  int64_t generation = 0;
  nlohmann::json status = nlohmann::json::object();  // as it stands
  std::string now;                                   // RFC 3339
  Status spec;                                       // the spec decoded (analysis_provider.h)
  Status ca;                                         // the CA ConfigMap read
  Status token;                                      // the token Secret read
  Status client;  // the client configured (a CA bundle that parses)
  bool probePending = false;
  std::optional<QueryAnswer> probe;
  std::optional<QueryStats> stats;
};

nlohmann::json providerStatus(const ProviderObserved& o);

}  // namespace lockstep::controllers
