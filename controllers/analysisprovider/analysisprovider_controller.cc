#include "controllers/analysisprovider/analysisprovider_controller.h"

#include <spdlog/spdlog.h>

#include <map>
#include <utility>

#include "api/v1alpha1/analysis_provider.h"
#include "api/v1alpha1/resources.h"
#include "controllers/analysisprovider/provider_status.h"
#include "controllers/common/execute.h"
#include "controllers/common/plan.h"
#include "operator/kube/object.h"
#include "operator/registry/credentials.h"
#include "operator/runtime/builder.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

std::string quote(const std::string& s) { return "\"" + s + "\""; }

// The value of `ref.key` in a ConfigMap's data or a Secret's (base64) data.
StatusOr<std::string> readKey(kube::Client& client, const kube::Resource& resource,
                              const std::string& ns, const v1::KeyRef& ref, bool secret) {
  const std::string what = resource.kind + " " + ns + "/" + ref.name;
  auto got = client.get(resource, ns, ref.name);
  if (!got.isOk()) {
    if (got.status().code() == Code::kNotFound) return Status(Code::kNotFound, what + " not found");
    return Status(got.status().code(), "reading " + what + ": " + got.status().message());
  }
  const json& data = v1::decode::object(*got, "data");
  const json* value = v1::decode::member(data, ref.key);
  if (value == nullptr || !value->is_string())
    return Status(Code::kNotFound, what + " has no key " + quote(ref.key));
  std::string text = value->get<std::string>();
  if (secret) {
    auto decoded = registry::base64Decode(text);
    if (!decoded)
      return Status(Code::kInvalidArgument, what + " key " + quote(ref.key) + " is not base64");
    text = *decoded;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (text.empty()) return Status(Code::kNotFound, what + " key " + quote(ref.key) + " is empty");
  return text;
}

}  // namespace

AnalysisProviderReconciler::AnalysisProviderReconciler(std::shared_ptr<kube::Client> client,
                                                       const kube::Indexer& providers,
                                                       kube::EventSink& events, kube::Clock& clock,
                                                       std::shared_ptr<AnalysisProviders> analysis,
                                                       std::string operatorNamespace)
    : client_(std::move(client)),
      providers_(providers),
      events_(events),
      clock_(clock),
      analysis_(std::move(analysis)),
      ns_(std::move(operatorNamespace)) {}

Result AnalysisProviderReconciler::reconcile(const Request& request) {
  const std::string& name = request.name;
  kube::ObjectPtr object = providers_.get("", name);
  if (!object) {
    analysis_->remove(name);
    return Result::done();
  }
  const v1::AnalysisProvider provider = v1::decodeAnalysisProviderObject(*object);
  ProviderObserved o;
  o.generation = provider.meta.generation;
  o.status = provider.status;
  auto wall = clock_.wallNow();
  o.now = kube::formatTime(wall, false);
  const int64_t nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();

  auto spec = v1::decodeAnalysisProviderSpec(provider.spec);
  if (!spec.isOk()) {
    o.spec = spec.status();
    analysis_->disable(name, spec.status().message());
  } else {
    ProviderConfig config;
    config.spec = *spec;
    if (!spec->caBundle.empty()) {
      config.caPem = spec->caBundle;
    } else if (spec->caConfigMapRef) {
      auto pem = readKey(*client_, v1::kConfigMaps, ns_, *spec->caConfigMapRef, false);
      if (pem.isOk()) {
        config.caPem = *pem;
      } else {
        o.ca = Status(pem.status().code(), "spec.caConfigMapRef: " + pem.status().message());
      }
    }
    if (spec->bearerTokenSecretRef) {
      auto token = readKey(*client_, v1::kSecrets, ns_, *spec->bearerTokenSecretRef, true);
      if (token.isOk()) {
        config.token = std::move(*token);
      } else {
        o.token =
            Status(token.status().code(), "spec.bearerTokenSecretRef: " + token.status().message());
      }
    }
    if (!o.ca.isOk() || !o.token.isOk()) {
      analysis_->disable(name, (!o.ca.isOk() ? o.ca : o.token).message());
    } else {
      o.client = analysis_->configure(name, config);
      if (o.client.isOk()) {
        o.probe = analysis_->probe(name, nowUnix / kProviderResync.count(), nowUnix);
        o.probePending = !o.probe;
        o.stats = analysis_->stats(name);
      }
    }
  }
  json status = providerStatus(o);
  if (status != provider.status) {
    ExecutionPlan x;
    PlannedApply s;
    s.resource = v1::kAnalysisProviders;
    s.object = statusApply(v1::kAnalysisProviders, "", name, status);
    s.resourceVersion = provider.resourceVersion;
    s.ignoreNotFound = true;
    s.what = "status of AnalysisProvider " + name;
    x.status = std::move(s);
    ExecutionOutcome out = execute(x, *client_, events_, "analysisprovider");
    if (!out.result.error.isOk()) return out.result;
  }
  return Result::after(kProviderResync);
}

void setupAnalysisProviderController(runtime::Manager& manager,
                                     const std::shared_ptr<AnalysisProviders>& analysis,
                                     const std::string& operatorNamespace, int workers) {
  kube::Informer& providers = manager.informer(v1::kAnalysisProviders);
  auto reconciler = std::make_shared<AnalysisProviderReconciler>(
      manager.sharedClient(), providers.cache(), manager.events(), manager.clock(), analysis,
      operatorNamespace);
  runtime::Controller& controller = runtime::ControllerBuilder(manager, "analysisprovider")
                                        .workers(workers)
                                        // Spec changes only (the default filter): its own status
                                        // writes do not reconcile it again.
                                        .forKind(v1::kAnalysisProviders)
                                        .complete(reconciler);
  // A provider not configured yet (the operator just started) makes a
  // measurement wait for its first reconcile instead of failing.
  analysis->setProviderExists([&cache = providers.cache()](const std::string& name) {
    return cache.get("", name) != nullptr;
  });
  // Who may use a provider: the namespace's labels, from the cache (never a
  // call at measurement time).
  kube::Informer& namespaces = manager.informer(v1::kNamespaces);
  analysis->setNamespaceLabels([&cache = namespaces.cache()](const std::string& ns)
                                   -> std::optional<std::map<std::string, std::string>> {
    kube::ObjectPtr o = cache.get("", ns);
    if (!o) return std::nullopt;
    std::map<std::string, std::string> labels;
    const json& l = v1::decode::object(v1::decode::object(*o, "metadata"), "labels");
    for (const auto& [k, v] : l.items())
      if (v.is_string()) labels[k] = v.get<std::string>();
    return labels;
  });
  // The platform's query templates (cluster-scoped), read at each ask.
  kube::Informer& templates = manager.informer(v1::kAnalysisTemplates);
  analysis->setTemplates(
      [&cache = templates.cache()](const std::string& name) -> std::optional<json> {
        kube::ObjectPtr o = cache.get("", name);
        if (!o) return std::nullopt;
        return v1::decode::object(*o, "spec");
      });
  // The health check answered: the provider's status says so.
  analysis->setWakeProvider([&controller](const std::string& name) {
    controller.enqueue({"", name});
  });
}

}  // namespace lockstep::controllers
