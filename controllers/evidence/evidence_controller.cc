#include "controllers/evidence/evidence_controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "api/image_ref.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_revision.h"
#include "api/v1alpha1/trust_policy.h"
#include "closure/include_reader.h"
#include "controllers/common/verify_containers.h"
#include "controllers/modelrelease/timestamps.h"
#include "evidence/fleet_permit.h"
#include "evidence/stage_evidence.h"
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

// The earlier of two results: an error first, then the shorter wait.
Result sooner(const Result& a, const Result& b) {
  if (!a.error.isOk()) return a;
  if (!b.error.isOk()) return b;
  if (a.requeue || b.requeue) return Result::requeueNow();
  if (a.requeueAfter.count() == 0) return b;
  if (b.requeueAfter.count() == 0) return a;
  return a.requeueAfter < b.requeueAfter ? a : b;
}

bool statusChanged(const kube::Object& a, const kube::Object& b) {
  return decode::object(a, "status") != decode::object(b, "status") ||
         decode::integer(decode::object(a, "metadata"), "generation", 0) !=
             decode::integer(decode::object(b, "metadata"), "generation", 0);
}

// A cached ConfigMap's data, or NotFound naming it.
StatusOr<json> configMapData(const kube::Indexer& cache, const std::string& ns,
                             const std::string& name) {
  kube::ObjectPtr cm = cache.get(ns, name);
  if (!cm) return Status(Code::kNotFound, "ConfigMap " + ns + "/" + name + " not found");
  return decode::object(*cm, "data");
}

}  // namespace

EvidenceReconciler::EvidenceReconciler(std::shared_ptr<kube::Client> client,
                                       const kube::Indexer& releases,
                                       const kube::Indexer& signingConfigs,
                                       const kube::Indexer& trustPolicies,
                                       const kube::Indexer& runtimeEnvs,
                                       const kube::Indexer& configMaps, kube::EventSink& events,
                                       kube::Clock& clock, EvidenceOptions options)
    : client_(std::move(client)),
      releases_(releases),
      trustPolicies_(trustPolicies),
      runtimeEnvs_(runtimeEnvs),
      configMaps_(configMaps),
      events_(events),
      clock_(clock),
      options_(std::move(options)),
      publisher_(client_, signingConfigs, options_.operatorNamespace,
                 options_.opener ? options_.opener : connectingOpener(options_.registryCaPem)) {
  options_.opener = publisher_.opener();
}

json EvidenceReconciler::runtimeEnvAdvisories(const json& release) const {
  const v1::ModelRelease r = v1::decodeModelRelease(release);
  kube::ObjectPtr got = runtimeEnvs_.get(r.meta.ns, r.spec.runtimeEnvName);
  if (!got) return json();
  return decode::object(decode::object(*got, "status"), "advisories");
}

StatusOr<closure::Closure> EvidenceReconciler::pinnedClosure(const json& release) {
  const v1::ModelRelease r = v1::decodeModelRelease(release);
  auto pin = v1::decodeRuntimePin(release);
  if (!pin) return invalidArgument("status.runtime: the release pinned no runtime revision");
  kube::ObjectPtr got = runtimeEnvs_.get(r.meta.ns, r.spec.runtimeEnvName);
  if (!got) return notFound("RuntimeEnv " + r.meta.ns + "/" + r.spec.runtimeEnvName + " not found");
  const v1::RuntimeEnv rte = v1::decodeRuntimeEnv(*got);
  std::string text, format, platform, environment, source;
  std::map<std::string, std::string> siblings;
  // The revision's own copy first: it outlives lock edits.
  auto kept =
      configMapData(configMaps_, r.meta.ns, closureConfigMapName(rte.meta.name, pin->revision));
  if (kept.isOk() && decode::member(*kept, "lock") != nullptr) {
    text = decode::string(*kept, "lock");
    json runtime = json::parse(decode::string(*kept, "runtime.json"), nullptr, false);
    format = decode::string(runtime, "format");
    platform = decode::string(runtime, "platform");
    environment = decode::string(runtime, "environment");
    source = "configmap/" + closureConfigMapName(rte.meta.name, pin->revision) + "[lock]";
  } else {
    const v1::LockSource& lock = rte.spec.lock;
    if (lock.inlineText) {
      text = *lock.inlineText;
      source = "spec.lock.inline";
    } else if (lock.configMapRef) {
      auto data = configMapData(configMaps_, r.meta.ns, lock.configMapRef->name);
      if (!data.isOk()) return data.status();
      text = decode::string(*data, lock.configMapRef->key);
      for (const auto& [k, v] : data->items())
        if (v.is_string()) siblings[k] = v.get<std::string>();
      source = "configmap/" + lock.configMapRef->name + "[" + lock.configMapRef->key + "]";
    }
    format = lock.format.value_or("");
    platform = lock.platform;
    environment = lock.environment;
  }
  if (text.empty())
    return invalidArgument("RuntimeEnv " + rte.meta.name + ": no lock text to make the BOM from");
  closure::ClosureOptions options;
  if (!format.empty()) {
    auto f = closure::parseFormatName(format);
    if (!f.isOk()) return f.status().withContext(source);
    options.format = *f;
  }
  options.platform = platform;
  options.environment = environment;
  options.allowUnhashed = rte.spec.allowUnhashed;
  options.sourceName = source;
  closure::MapIncludeReader includes(std::move(siblings));
  options.includes = &includes;
  auto c = closure::computeClosure(text, options);
  if (!c.isOk()) return c.status();
  if (c->closureHash != pin->closureHash) {
    return invalidArgument(
        "the lock of RuntimeEnv " + rte.meta.name + " gives closure " + c->closureHash +
        ", not the pinned revision " + std::to_string(pin->revision) + "'s " + pin->closureHash +
        " (the lock changed since; set spec.verify to keep each revision's lock)");
  }
  return c;
}

Result EvidenceReconciler::reconcile(const Request& request) {
  kube::ObjectPtr obj = releases_.get(request.ns, request.name);
  if (!obj) return Result::done();
  const json& release = *obj;
  if (decode::member(decode::object(release, "metadata"), "deletionTimestamp") != nullptr)
    return Result::done();
  return sooner(sooner(answerEvidenceStage(release), answerFleetPermit(release)),
                publishEvidence(release));
}

Result EvidenceReconciler::publishEvidence(const json& release) {
  const v1::ObjectMeta meta = v1::decodeMeta(release);
  const std::string key = meta.key();
  json status = decode::object(release, "status");
  {
    std::lock_guard<std::mutex> lock(mu_);
    // What this controller wrote last, until the cache shows it (then forgotten: the map
    // holds only releases whose status write the informer has not delivered yet).
    if (auto it = written_.find(meta.uid); it != written_.end()) {
      if (decode::member(status, "evidence") != nullptr && status["evidence"] == it->second) {
        written_.erase(it);
      } else {
        status["evidence"] = it->second;
      }
    }
  }
  auto planned = plannedStatements(release, options_.context);
  std::string bomError;  // the BOM could not be made (no lock for the pinned closure)
  if (!planned.isOk()) {
    const std::string why = planned.status().message();
    auto pkg = api::parseImageRef(decode::string(decode::object(release, "spec"), "package"));
    if (!pkg.isOk() || !pkg->pinned()) {  // a package by tag gets no evidence, by design
      spdlog::debug("evidence {}: {}", key, why);
      return Result::done();
    }
    // Anything else is a status the operator cannot read (status.canary, say): no
    // statement is made for this release until it is readable, and the user is told.
    bool raise = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto [it, added] = unplanned_.try_emplace(meta.uid, why);
      raise = added || it->second != why;
      it->second = why;
    }
    if (raise) {
      spdlog::warn("evidence {}: no statement is made: {}", key, why);
      (void)events_.warning(release, "EvidenceNotPlanned",
                            "no evidence statement is made for this release: " + why);
    }
    return Result::done();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    unplanned_.erase(meta.uid);
  }
  if (planned->empty()) return Result::done();
  const std::string package = decode::string(decode::object(release, "spec"), "package");
  auto ref = registry::parsePackageRef(package);
  if (!ref.isOk()) return Result::done();
  auto config = publisher_.configFor(ref->name());
  std::string setupError;
  if (!config.isOk()) {
    setupError = config.status().message();
  } else if (!config->has_value()) {
    return Result::done();  // no SigningConfig signs for this package
  }
  // After the config check: a package nobody signs for costs no lock parse.
  // The ML-BOM once the gates passed, unless already published.
  if (bomDue(release)) {
    bool published = false;
    for (const json& e : decode::array(status, "evidence"))
      published = published || (decode::string(e, "name") == kBomStatementName &&
                                decode::string(e, "phase") == "Published");
    if (published) {
      // As recorded: published evidence is append-only (foldEvidence keeps it).
      planned->push_back({kBomStatementName, "bom", kCycloneDxPredicate, "", ""});
    } else if (auto closure = pinnedClosure(release); !closure.isOk()) {
      bomError = closure.status().message();
      planned->push_back({kBomStatementName, "bom", kCycloneDxPredicate, "", ""});
    } else if (auto bom =
                   bomStatement(release, *closure, options_.context, runtimeEnvAdvisories(release));
               bom.isOk()) {
      planned->push_back(std::move(*bom));
    } else {
      bomError = bom.status().message();
      planned->push_back({kBomStatementName, "bom", kCycloneDxPredicate, "", ""});
    }
  }

  const auto wall = clock_.wallNow();
  const std::string now = kube::formatTime(wall, false);
  const int64_t nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  int64_t heldBack = 0;
  std::vector<PlannedStatement> due =
      dueStatements(decode::array(status, "evidence"), *planned, nowUnix, &heldBack);
  // A BOM that could not be made is not pushed: it fails with the reason.
  std::vector<EvidenceOutcome> outcomes;
  for (auto it = due.begin(); it != due.end();) {
    if (it->payload.empty()) {
      if (!bomError.empty())
        outcomes.push_back({it->name, it->predicateType, "", "", "", false, bomError});
      it = due.erase(it);
    } else {
      ++it;
    }
  }
  if (due.empty() && bomError.empty() &&
      decode::array(status, "evidence").size() == planned->size()) {
    return heldBack > 0 ? Result::after(std::chrono::seconds(heldBack)) : Result::done();
  }
  if (!due.empty() && setupError.empty()) {
    auto s = publisher_.setup(**config, ref->registry);
    if (!s.isOk()) {
      setupError = s.status().message();
    } else {
      for (EvidenceOutcome& o : publisher_.publish(due, package, *s, now))
        outcomes.push_back(std::move(o));
    }
  }
  if (!setupError.empty()) {
    for (const PlannedStatement& p : due)
      outcomes.push_back({p.name, p.predicateType, p.digest, "", "", false, setupError});
  }
  EvidenceStatus st = foldEvidence(status, *planned, outcomes, "", meta.generation, now);
  json apply = {
      {"apiVersion", v1::kModelReleases.apiVersion()},
      {"kind", v1::kModelReleases.kind},
      {"metadata", {{"name", meta.name}, {"namespace", meta.ns}}},
      {"status", {{"evidence", st.entries}, {"conditions", json::array({st.condition})}}}};
  auto applied = client_->applyStatus(v1::kModelReleases, apply,
                                      kube::PatchParams::apply(kEvidenceFieldManager));
  if (applied.isOk()) {
    std::lock_guard<std::mutex> lock(mu_);
    written_[meta.uid] = st.entries;
  } else {
    spdlog::warn("evidence {}: recording status: {}", key, applied.status().toString());
  }
  for (const EvidenceOutcome& o : outcomes) {
    if (o.error.empty()) {
      const std::string msg = o.name + " (" + o.statementDigest + ") " +
                              (o.alreadyThere ? "was already" : "published") + " as referrer " +
                              o.referrer + " of " + package;
      spdlog::info("evidence {}: {}", key, msg);
      if (!o.alreadyThere) (void)events_.normal(release, "EvidencePublished", msg);
    } else {
      spdlog::warn("evidence {}: {}: {}", key, o.name, o.error);
    }
  }
  if (!outcomes.empty() && std::any_of(outcomes.begin(), outcomes.end(),
                                       [](const EvidenceOutcome& o) { return !o.error.empty(); })) {
    // One Warning per pass that failed, not per statement.
    std::string first;
    for (const EvidenceOutcome& o : outcomes)
      if (first.empty() && !o.error.empty()) first = o.name + ": " + o.error;
    (void)events_.warning(release, "EvidencePublishFailed",
                          first + " (retrying; the release is not held back)");
  }
  int64_t retry = st.retryAfterSeconds;
  if (heldBack > 0 && (retry == 0 || heldBack < retry)) retry = heldBack;
  if (!applied.isOk() && (retry == 0 || retry > 10)) retry = 10;
  return retry > 0 ? Result::after(std::chrono::seconds(retry)) : Result::done();
}

StatusOr<v1::TrustPolicySpec> EvidenceReconciler::trustPolicy(const std::string& name,
                                                              std::string* reason) const {
  kube::ObjectPtr policy = trustPolicies_.get("", name);
  if (!policy) {
    *reason = evidence::kReasonEvidenceUntrusted;
    return notFound("TrustPolicy \"" + name + "\" does not exist: no key is trusted");
  }
  auto spec = v1::decodeTrustPolicySpec(decode::object(*policy, "spec"));
  if (!spec.isOk()) {
    *reason = evidence::kReasonEvidenceInvalid;
    return invalidArgument("TrustPolicy \"" + name + "\": " + spec.status().message());
  }
  return *spec;
}

StatusOr<std::vector<evidence::ReferrerBundle>> EvidenceReconciler::readReferrers(
    const std::string& package) {
  auto ref = registry::parsePackageRef(package);
  if (!ref.isOk()) return ref.status();
  // Read with the credentials of the SigningConfig for the package, if any.
  std::optional<registry::Credentials> creds;
  std::string caPem;
  auto config = publisher_.configFor(ref->name());
  if (config.isOk() && config->has_value()) {
    auto c = publisher_.credentials(**config, ref->registry);
    if (!c.isOk()) return c.status();
    creds = *c;
    caPem = (*config)->registryCaPem;
  }
  auto client = options_.opener(ref->registry, creds, caPem);
  if (!client.isOk())
    return Status(client.status().code(),
                  "registry " + ref->registry + ": " + client.status().message());
  auto list = registry::readBundleReferrers(**client, ref->repository, ref->digest, &bundles_);
  if (!list.isOk()) {
    return Status(list.status().code(),
                  "reading the referrers of " + package + ": " + list.status().message());
  }
  std::vector<evidence::ReferrerBundle> bundles;
  for (const registry::BundleReferrer& r : list->referrers) {
    bundles.push_back({r.descriptor.digest,
                       registry::annotationOf(r.descriptor, registry::kBundleStatementAnnotation),
                       r.bundle, r.error});
  }
  return bundles;
}

evidence::StageEvidenceResult EvidenceReconciler::readStageEvidence(
    const EvidenceCheckRequest& request) {
  evidence::StageEvidenceResult out;
  auto spec = trustPolicy(request.requirement.policyName, &out.reason);
  if (!spec.isOk()) {
    out.message = spec.status().message();
    return out;
  }
  auto bundles = readReferrers(request.package);
  if (!bundles.isOk()) {
    out.reason = kReasonRegistryUnavailable;
    out.message = bundles.status().message();
    return out;
  }
  return evidence::checkStageEvidence(*bundles, *spec, request.requirement);
}

FleetCheckObserved EvidenceReconciler::readFleetPermit(const FleetCheckRequest& request) {
  FleetCheckObserved out;
  out.key = request.key();
  out.cluster = options_.context.clusterName;
  auto spec = trustPolicy(request.trustPolicy, &out.result.reason);
  if (!spec.isOk()) {
    out.result.message = spec.status().message();
    return out;
  }
  auto ref = api::parseImageRef(request.package);
  if (!ref.isOk() || ref->digest.empty()) {
    out.result.reason = evidence::kReasonEvidenceInvalid;
    out.result.message = "spec.package " + request.package + " is not pinned by digest";
    return out;
  }
  auto bundles = readReferrers(request.package);
  if (!bundles.isOk()) {
    out.unavailable = bundles.status().message();
    return out;
  }
  evidence::FleetPermitRequirement want;
  want.packageName = ref->domain + "/" + ref->path;
  want.packageDigest = ref->digest;
  want.cluster = out.cluster;
  want.policyName = request.trustPolicy;
  out.result = evidence::checkFleetPermit(*bundles, *spec, want);
  return out;
}

void EvidenceReconciler::recheckNow() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [slot, r] : rechecks_) r.nextUnix = 0;
}

Result EvidenceReconciler::answerEvidenceStage(const json& release) {
  std::optional<EvidenceCheckRequest> request = pendingEvidenceRequest(release);
  if (!request) return Result::done();
  const v1::ObjectMeta meta = v1::decodeMeta(release);
  const json& status = decode::object(release, "status");
  const std::optional<EvidenceCheckObserved> previous = evidenceAnswerOf(status, request->stage);
  const std::string key = request->key();
  if (previous && previous->key == key && previous->result.passed) return Result::done();
  const auto wall = clock_.wallNow();
  const int64_t nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  const std::string slot = meta.uid + "/" + request->stage;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rechecks_.find(slot);
    if (it != rechecks_.end() && it->second.key == key && nowUnix < it->second.nextUnix)
      return Result::after(std::chrono::seconds(it->second.nextUnix - nowUnix));
  }
  EvidenceCheckObserved answer;
  answer.key = key;
  answer.result = readStageEvidence(*request);
  answer.checkedAt = kube::formatTime(wall, false);
  int failures = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Recheck& r = rechecks_[slot];
    if (r.key != key) r = Recheck{key, 0, 0};
    r.failures = answer.result.reason == kReasonRegistryUnavailable ? r.failures + 1 : 0;
    failures = r.failures;
  }
  answer.retryAfterSeconds =
      failures > 0 ? evidenceBackoffSeconds(failures) : options_.evidenceRecheckSeconds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rechecks_[slot].nextUnix = answer.result.passed ? 0 : nowUnix + answer.retryAfterSeconds;
  }
  const std::string what = "evidence " + meta.key() + " stage \"" + request->stage + "\"";
  if (evidenceAnswerChanged(previous, answer)) {
    json apply = {
        {"apiVersion", v1::kModelReleases.apiVersion()},
        {"kind", v1::kModelReleases.kind},
        {"metadata", {{"name", meta.name}, {"namespace", meta.ns}}},
        {"status",
         {{"evidenceChecks", json::array({evidenceAnswerJson(request->stage, answer)})}}}};
    auto applied = client_->applyStatus(v1::kModelReleases, apply,
                                        kube::PatchParams::apply(kEvidenceCheckFieldManager));
    if (!applied.isOk()) {
      spdlog::warn("{}: recording the answer: {}", what, applied.status().toString());
      std::lock_guard<std::mutex> lock(mu_);
      rechecks_[slot].nextUnix = 0;  // the answer is not recorded: read again
      return Result::failed(applied.status());
    }
    spdlog::info("{}: {}{}", what, answer.result.passed ? "" : answer.result.reason + ": ",
                 answer.result.message);
  }
  if (answer.result.passed) {
    std::lock_guard<std::mutex> lock(mu_);
    rechecks_.erase(slot);
    return Result::done();
  }
  return Result::after(std::chrono::seconds(answer.retryAfterSeconds));
}

Result EvidenceReconciler::answerFleetPermit(const json& release) {
  std::optional<FleetCheckRequest> request = pendingFleetRequest(release);
  if (!request) return Result::done();
  const v1::ObjectMeta meta = v1::decodeMeta(release);
  const json& status = decode::object(release, "status");
  const std::optional<FleetCheckObserved> previous = fleetAnswerOf(status, request->stage);
  const std::string key = request->key();
  const auto wall = clock_.wallNow();
  const int64_t nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  const std::string slot = meta.uid + "/" + request->stage + "/fleet";
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rechecks_.find(slot);
    if (it != rechecks_.end() && it->second.key == key && nowUnix < it->second.nextUnix)
      return Result::after(std::chrono::seconds(it->second.nextUnix - nowUnix));
  }
  FleetCheckObserved answer = readFleetPermit(*request);
  answer.checkedAt = kube::formatTime(wall, false);
  int failures = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Recheck& r = rechecks_[slot];
    if (r.key != key) r = Recheck{key, 0, 0};
    r.failures = answer.unavailable.empty() ? 0 : r.failures + 1;
    failures = r.failures;
  }
  // A registry that is back is seen within a minute: a waiting canary, or an
  // abort of a promoted one, is never held up by a long back-off.
  answer.retryAfterSeconds = failures > 0 ? std::min<int64_t>(evidenceBackoffSeconds(failures), 60)
                                          : options_.evidenceRecheckSeconds;
  // Final once aborted or settled: nothing read later can change it.
  const bool final = answer.unavailable.empty() && (answer.result.aborted || answer.result.settled);
  {
    std::lock_guard<std::mutex> lock(mu_);
    rechecks_[slot].nextUnix = final ? 0 : nowUnix + answer.retryAfterSeconds;
  }
  const std::string what = "fleet permit " + meta.key() + " stage \"" + request->stage + "\"";
  auto comparable = [&](const FleetCheckObserved& a) {
    json j = fleetAnswerJson(request->stage, a);
    j.erase("checkedAt");
    j.erase("retryAfterSeconds");
    return j;
  };
  if (!previous || comparable(*previous) != comparable(answer)) {
    json apply = {
        {"apiVersion", v1::kModelReleases.apiVersion()},
        {"kind", v1::kModelReleases.kind},
        {"metadata", {{"name", meta.name}, {"namespace", meta.ns}}},
        {"status", {{"evidenceChecks", json::array({fleetAnswerJson(request->stage, answer)})}}}};
    auto applied = client_->applyStatus(v1::kModelReleases, apply,
                                        kube::PatchParams::apply(kFleetCheckFieldManager));
    if (!applied.isOk()) {
      spdlog::warn("{}: recording the answer: {}", what, applied.status().toString());
      std::lock_guard<std::mutex> lock(mu_);
      rechecks_[slot].nextUnix = 0;  // the answer is not recorded: read again
      return Result::failed(applied.status());
    }
    spdlog::info("{} (cluster {}): {}", what, answer.cluster,
                 answer.unavailable.empty() ? answer.result.message
                                            : "RegistryUnavailable: " + answer.unavailable);
  }
  if (final) {
    std::lock_guard<std::mutex> lock(mu_);
    rechecks_.erase(slot);
    return Result::done();
  }
  return Result::after(std::chrono::seconds(answer.retryAfterSeconds));
}

void setupEvidenceController(runtime::Manager& manager, EvidenceOptions options, int workers) {
  kube::Informer& releases = manager.informer(v1::kModelReleases);
  kube::Informer& configs = manager.informer(v1::kSigningConfigs);
  kube::Informer& policies = manager.informer(v1::kTrustPolicies);
  // The RuntimeEnv controller's informers (the same options: the same watch).
  kube::Informer& rtes = manager.informer(v1::kRuntimeEnvs);
  kube::Informer& cms = manager.informer(v1::kConfigMaps);
  auto reconciler = std::make_shared<EvidenceReconciler>(
      manager.sharedClient(), releases.cache(), configs.cache(), policies.cache(), rtes.cache(),
      cms.cache(), manager.events(), manager.clock(), std::move(options));
  const kube::Indexer* releaseCache = &releases.cache();
  // A config made, changed or deleted: every release may now be signed.
  auto everyRelease = [releaseCache](const kube::Object&) {
    std::vector<Request> out;
    for (const kube::ObjectPtr& r : releaseCache->list())
      out.push_back({kube::namespaceOf(*r), kube::name(*r)});
    return out;
  };
  runtime::ControllerBuilder(manager, "evidence")
      .workers(workers)
      .forKind(v1::kModelReleases, statusChanged)
      .watches(v1::kSigningConfigs, everyRelease)
      // A policy made or changed: a held evidence stage may now pass.
      .watches(v1::kTrustPolicies,
               [everyRelease, reconciler](const kube::Object& o) {
                 reconciler->recheckNow();
                 return everyRelease(o);
               })
      .complete(reconciler);
}

}  // namespace lockstep::controllers
