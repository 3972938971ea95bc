#include "controllers/fleet/modelrollout_controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/signing_config.h"
#include "api/v1alpha1/trust_policy.h"
#include "controllers/common/execute.h"
#include "controllers/common/plan.h"
#include "controllers/fleet/fleet_referrers.h"
#include "controllers/fleet/rollout_status.h"
#include "controllers/fleet/wave_plan.h"
#include "evidence/stage_evidence.h"
#include "evidence/statement.h"
#include "operator/kube/object.h"
#include "operator/registry/bundle_referrers.h"
#include "operator/runtime/builder.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

std::string quote(const std::string& s) { return "\"" + s + "\""; }

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A permit or abort as a statement to sign and push.
StatusOr<PlannedStatement> plannedStatement(const std::string& name,
                                            StatusOr<nlohmann::ordered_json> statement,
                                            const char* predicateType) {
  if (!statement.isOk()) return statement.status();
  PlannedStatement p;
  p.name = name;
  p.stage = evidence::kFleetStage;
  p.predicateType = predicateType;
  p.payload = statement->dump();
  p.digest = evidence::sha256Digest(p.payload);
  return p;
}

}  // namespace

ModelRolloutReconciler::ModelRolloutReconciler(std::shared_ptr<kube::Client> client,
                                               const kube::Indexer& rollouts,
                                               const kube::Indexer& signingConfigs,
                                               const kube::Indexer& trustPolicies,
                                               kube::EventSink& events, kube::Clock& clock,
                                               ModelRolloutOptions options)
    : client_(std::move(client)),
      rollouts_(rollouts),
      signingConfigs_(signingConfigs),
      trustPolicies_(trustPolicies),
      events_(events),
      clock_(clock),
      options_(std::move(options)),
      publisher_(client_, signingConfigs, options_.operatorNamespace,
                 options_.opener ? options_.opener : connectingOpener(options_.registryCaPem)) {
  if (options_.pollSeconds <= 0) options_.pollSeconds = 15;
}

StatusOr<std::vector<v1::InventoryCluster>> ModelRolloutReconciler::clusterProfiles() {
  auto list = client_->list(v1::kClusterProfiles, "");
  if (!list.isOk()) {
    // The API is not served on this hub: no ClusterProfiles, spec.inventory decides.
    if (list.status().code() == Code::kNotFound) return std::vector<v1::InventoryCluster>();
    return list.status();
  }
  std::vector<json> items(list->items.begin(), list->items.end());
  return v1::clusterProfileInventory(items);
}

Result ModelRolloutReconciler::reconcile(const Request& request) {
  kube::ObjectPtr obj = rollouts_.get(request.ns, request.name);
  const bool deleting =
      obj && decode::member(decode::object(*obj, "metadata"), "deletionTimestamp") != nullptr;
  if (!obj || deleting) {
    // Nothing is written for a deleted rollout: its permits stay in the registry.
    if (obj) {
      std::lock_guard<std::mutex> lock(mu_);
      pushed_.erase(v1::decodeMeta(*obj).uid);
      registryErrors_.erase(v1::decodeMeta(*obj).uid);
    }
    return Result::done();
  }
  const v1::ObjectMeta meta = v1::decodeMeta(*obj);
  const std::string key = meta.key();
  const auto wall = clock_.wallNow();
  const int64_t nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  const auto poll = std::chrono::seconds(options_.pollSeconds);

  RolloutObserved o;
  o.generation = meta.generation;
  o.status = decode::object(*obj, "status");
  o.now = kube::formatTime(wall, false);
  std::vector<std::pair<std::string, std::string>> written;  // Event reason, message
  Result result = Result::after(poll);

  // Writes the status when it changed (guarded by the resourceVersion it was made from).
  auto finish = [&](Result r) -> Result {
    json status = rolloutStatus(o);
    if (status == o.status) return r;
    ExecutionPlan x;
    PlannedApply s;
    s.resource = v1::kModelRollouts;
    s.object = statusApply(v1::kModelRollouts, meta.ns, meta.name, status);
    s.fieldManager = kFleetFieldManager;
    s.resourceVersion = decode::string(decode::object(*obj, "metadata"), "resourceVersion");
    s.ignoreNotFound = true;
    s.what = "status of ModelRollout " + key;
    x.status = std::move(s);
    ExecutionOutcome out = execute(x, *client_, events_, "modelrollout");
    if (!out.result.error.isOk()) return out.result;
    return r;
  };
  auto stalled = [&](const std::string& reason, const std::string& message) {
    spdlog::warn("modelrollout {}: {}: {}", key, reason, message);
    o.problem = RolloutProblem{reason, message};
  };

  auto spec = v1::decodeModelRolloutSpec(decode::object(*obj, "spec"));
  if (!spec.isOk()) {
    stalled(kReasonRolloutInvalidSpec, spec.status().message());
    return finish(Result::done());  // a spec edit reconciles again
  }
  auto ref = registry::parsePackageRef(spec->package);
  if (!ref.isOk()) {
    stalled(kReasonRolloutInvalidSpec, "spec.package: " + ref.status().message());
    return finish(Result::done());
  }

  // The TrustPolicy: whose prod records (and permits, aborts) count.
  FleetKeys keys;
  kube::ObjectPtr policy = trustPolicies_.get("", spec->trustPolicy);
  if (!policy) {
    stalled(kReasonTrustPolicyNotFound, "spec.trustPolicy: TrustPolicy " +
                                            quote(spec->trustPolicy) +
                                            " does not exist: no cluster's prod record is trusted");
    return finish(result);
  }
  auto policySpec = v1::decodeTrustPolicySpec(decode::object(*policy, "spec"));
  if (!policySpec.isOk()) {
    stalled(kReasonTrustPolicyInvalid,
            "TrustPolicy " + quote(spec->trustPolicy) + ": " + policySpec.status().message());
    return finish(result);
  }
  auto prodKeys = evidence::trustedKeys(*policySpec, ref->name(), "prod", spec->trustPolicy);
  auto fleetKeys =
      evidence::trustedKeys(*policySpec, ref->name(), evidence::kFleetStage, spec->trustPolicy);
  if (!prodKeys.isOk() || !fleetKeys.isOk()) {
    stalled(kReasonTrustPolicyInvalid,
            (!prodKeys.isOk() ? prodKeys.status() : fleetKeys.status()).message());
    return finish(result);
  }
  keys.prod = std::move(*prodKeys);
  keys.fleet = std::move(*fleetKeys);

  // The waves: ClusterProfiles when the hub has any, else spec.inventory.
  auto profiles = clusterProfiles();
  if (!profiles.isOk()) {
    if (profiles.status().code() == Code::kForbidden) {
      stalled(kReasonInventoryUnavailable,
              "listing ClusterProfiles (multicluster.x-k8s.io): " + profiles.status().message());
      return finish(result);
    }
    return Result::failed(profiles.status().withContext("listing ClusterProfiles"));
  }
  const std::vector<v1::ResolvedWave> waves =
      v1::resolveWaves(*spec, v1::rolloutInventory(*spec, *profiles));

  // The hub's signing key and registry credentials (none: read anonymously, sign nothing).
  std::optional<v1::SigningConfigSpec> config;
  std::string configName = spec->signingConfig;
  if (!spec->signingConfig.empty()) {
    kube::ObjectPtr named = signingConfigs_.get("", spec->signingConfig);
    if (!named) {
      stalled(kReasonSigningConfigNotFound, "spec.signingConfig: SigningConfig " +
                                                quote(spec->signingConfig) + " does not exist");
      return finish(result);
    }
    auto decoded = v1::decodeSigningConfigSpec(decode::object(*named, "spec"));
    if (!decoded.isOk()) {
      stalled(kReasonSigningConfigNotFound,
              "SigningConfig " + quote(spec->signingConfig) + ": " + decoded.status().message());
      return finish(result);
    }
    config = *decoded;
  } else {
    auto found = publisher_.configFor(ref->name());
    if (!found.isOk()) {
      stalled(kReasonSigningConfigNotFound, found.status().message());
      return finish(result);
    }
    config = *found;
    configName = "matching " + ref->name();
  }
  std::optional<RegistryPublisher::Setup> setup;
  if (config) {
    auto s = publisher_.setup(*config, ref->registry);
    if (!s.isOk()) {
      if (s.status().code() == Code::kUnavailable)
        return Result::failed(s.status().withContext("reading the SigningConfig's Secrets"));
      stalled(kReasonSigningKeyUnavailable, s.status().message());
      return finish(result);
    }
    setup = std::move(*s);
    // Permits and aborts signed by the hub's own key count as its TrustPolicy's do.
    keys.fleet.push_back(
        {"the hub's key (SigningConfig " + configName + ")",
         std::shared_ptr<const evidence::PublicKey>(setup->signer, &setup->signer->publicKey())});
  }

  // The registry: every permit, record and abort for the package.
  auto registryFailed = [&](const std::string& why) {
    int failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      failures = ++registryErrors_[meta.uid];
    }
    spdlog::warn("modelrollout {}: {} (attempt {})", key, why, failures);
    o.registryError = why;
    return finish(Result::after(std::chrono::seconds(evidenceBackoffSeconds(failures))));
  };
  auto client = publisher_.opener()(ref->apiHost(), setup ? setup->credentials : std::nullopt,
                                    setup ? setup->caPem : std::string());
  if (!client.isOk())
    return registryFailed("registry " + ref->registry + ": " + client.status().message());
  auto list = registry::readBundleReferrers(**client, ref->repository, ref->digest, &bundles_);
  if (!list.isOk()) {
    return registryFailed("reading the referrers of " + spec->package + ": " +
                          list.status().message());
  }
  std::vector<evidence::ReferrerBundle> bundles;
  for (const registry::BundleReferrer& r : list->referrers) {
    bundles.push_back({r.descriptor.digest,
                       registry::annotationOf(r.descriptor, registry::kBundleStatementAnnotation),
                       r.bundle, r.error});
  }
  FleetReferrers found = readFleetReferrers(bundles, keys, ref->digest);

  WavePlanInput in;
  in.rollout = meta;
  in.spec = *spec;
  in.waves = waves;
  in.permits = found.permits;
  in.records = found.records;
  in.abortInRegistry = !found.aborts.empty();
  in.nowUnix = nowUnix;
  {
    // What this hub pushed and the registry does not list yet is fed back.
    std::lock_guard<std::mutex> lock(mu_);
    registryErrors_.erase(meta.uid);
    Pushed& mine = pushed_[meta.uid];
    // Listed: done. Not listed this many reads after its push: lost, planned again.
    auto settled = [&](std::pair<evidence::WavePermit, int>& p) {
      if (std::find(found.permits.begin(), found.permits.end(), p.first) != found.permits.end())
        return true;
      return ++p.second > kForgetAfterMisses;
    };
    mine.permits.erase(std::remove_if(mine.permits.begin(), mine.permits.end(), settled),
                       mine.permits.end());
    for (const auto& [p, misses] : mine.permits) in.permits.push_back(p);
    if (!found.aborts.empty() || (mine.abort && ++mine.abortMisses > kForgetAfterMisses)) {
      mine.abort = false;
      mine.abortMisses = 0;
    }
    in.abortInRegistry = in.abortInRegistry || mine.abort;
  }
  WavePlan plan = planWaves(in);

  // Sign and push what the planner decided.
  std::vector<PlannedStatement> due;
  for (const evidence::WavePermit& p : plan.permits) {
    auto st = plannedStatement("fleet/permit/" + p.wave, evidence::wavePermitStatement(p),
                               evidence::kWavePermitPredicate);
    if (!st.isOk()) {
      stalled(kReasonRolloutInvalidSpec, st.status().message());
      break;
    }
    due.push_back(std::move(*st));
  }
  if (plan.abort) {
    auto st = plannedStatement("fleet/abort", evidence::fleetAbortStatement(*plan.abort),
                               evidence::kFleetAbortPredicate);
    if (st.isOk()) {
      due.push_back(std::move(*st));
    } else {
      stalled(kReasonRolloutInvalidSpec, st.status().message());
    }
  }
  if (!due.empty() && !o.problem && !setup) {
    stalled(kReasonSigningConfigNotFound,
            "no SigningConfig signs for " + ref->name() + ": the hub cannot sign " + due[0].name +
                " (set spec.signingConfig, or add the repository to a SigningConfig)");
  }
  if (!due.empty() && !o.problem) {
    std::vector<EvidenceOutcome> outcomes = publisher_.publish(due, spec->package, *setup, o.now);
    std::string error;
    for (size_t i = 0; i < outcomes.size() && i < due.size(); ++i) {
      const EvidenceOutcome& out = outcomes[i];
      if (!out.error.empty()) {
        if (error.empty())
          error = "pushing " + out.name + " to " + spec->package + ": " + out.error;
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (out.predicateType == evidence::kWavePermitPredicate) {
        const evidence::WavePermit& p = plan.permits.at(i);
        pushed_[meta.uid].permits.emplace_back(p, 0);
        in.permits.push_back(p);
        written.emplace_back("WavePermitted",
                             "wave " + quote(p.wave) + ": " +
                                 (p.allClusters ? std::string("the open permit (every cluster)")
                                                : "permit for " + joined(p.clusters)) +
                                 " signed and pushed as referrer " + out.referrer);
      } else {
        pushed_[meta.uid].abort = true;
        in.abortInRegistry = true;
        written.emplace_back(
            "FleetAborted",
            "fleet abort in wave " + quote(plan.abort->wave) + " signed and pushed as referrer " +
                out.referrer + ": " + std::to_string(plan.abort->failures.size()) +
                " failures, maxFailures " + std::to_string(plan.abort->maxFailures));
      }
    }
    for (const auto& [reason, message] : written) {
      spdlog::info("modelrollout {}: {}", key, message);
      (void)(reason == "FleetAborted" ? events_.warning(*obj, reason, message)
                                      : events_.normal(*obj, reason, message));
    }
    if (!error.empty()) return registryFailed(error);
    // The status shows what was just written: plan again with it.
    if (!written.empty()) plan = planWaves(in);
    if (!plan.permits.empty() || plan.abort) result = Result::after(std::chrono::seconds(1));
  }
  o.plan = plan;
  o.ignored = found.ignored;
  if (result.requeueAfter == poll) {
    auto wait = poll;
    if (plan.phase == kRolloutSucceeded || plan.phase == kRolloutAborted) wait = 4 * poll;
    if (plan.requeueAfterSeconds > 0)
      wait = std::min<std::chrono::seconds>(wait, std::chrono::seconds(plan.requeueAfterSeconds));
    result = Result::after(wait);
  }
  return finish(result);
}

void setupModelRolloutController(runtime::Manager& manager, ModelRolloutOptions options,
                                 int workers) {
  kube::Informer& rollouts = manager.informer(v1::kModelRollouts);
  kube::Informer& configs = manager.informer(v1::kSigningConfigs);
  kube::Informer& policies = manager.informer(v1::kTrustPolicies);
  auto reconciler = std::make_shared<ModelRolloutReconciler>(
      manager.sharedClient(), rollouts.cache(), configs.cache(), policies.cache(), manager.events(),
      manager.clock(), std::move(options));
  const kube::Indexer* rolloutCache = &rollouts.cache();
  // A TrustPolicy or SigningConfig made, changed or deleted: every rollout may read differently.
  auto everyRollout = [rolloutCache](const kube::Object&) {
    std::vector<Request> out;
    for (const kube::ObjectPtr& r : rolloutCache->list())
      out.push_back({kube::namespaceOf(*r), kube::name(*r)});
    return out;
  };
  runtime::ControllerBuilder(manager, "modelrollout")
      .workers(workers)
      // Spec changes only: its own status writes do not reconcile it again.
      .forKind(v1::kModelRollouts)
      .watches(v1::kSigningConfigs, everyRollout)
      .watches(v1::kTrustPolicies, everyRollout)
      .complete(reconciler);
}

}  // namespace lockstep::controllers
