#include "controllers/runtimeenv/runtimeenv_verification.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_revision.h"
#include "closure/cuda.h"
#include "controllers/common/object_names.h"
#include "controllers/common/verify_containers.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"
#include "verify/schedule.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): the kinds' vocabulary

constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
// A Job not in the cache this long after its run started was deleted (not merely unseen yet).
constexpr int64_t kJobGoneAfterSeconds = 60;
// How long a failed Job's pod may lag behind it in the cache before the result goes without it.
constexpr int64_t kPodLagSeconds = 10;
constexpr size_t kMaxMessage = 1024;

struct Target {
  std::string product;
  std::string node;
  std::string driver;
};

// One node per GPU product: the first by name that is schedulable and whose
// driver satisfies the minimum. A CPU-only closure: one run, anywhere.
std::vector<Target> targetsOf(const VerificationInput& in) {
  if (in.cuda.empty()) return {{"cpu", "", ""}};
  std::vector<kube::ObjectPtr> nodes = in.nodes;
  std::sort(nodes.begin(), nodes.end(), [](const kube::ObjectPtr& a, const kube::ObjectPtr& b) {
    return kube::name(*a) < kube::name(*b);
  });
  std::map<std::string, Target> byProduct;
  for (const auto& node : nodes) {
    if (decode::boolean(decode::object(*node, "spec"), "unschedulable", false)) continue;
    const auto labels = kube::labels(*node);
    auto product = labels.find(kGpuProductLabel);
    if (product == labels.end() || product->second.empty()) continue;
    auto driver = closure::driverFromGfdLabels(labels);
    if (!driver || !closure::driverSatisfies(*driver, in.minDriver)) continue;
    byProduct.emplace(product->second, Target{product->second, kube::name(*node), *driver});
  }
  std::vector<Target> out;
  out.reserve(byProduct.size());
  for (auto& [product, t] : byProduct) out.push_back(std::move(t));
  return out;
}

// The RuntimeEnv as the controlling owner: deleted with it (garbage collection).
json ownedBy(const ObjectMeta& meta) {
  return json::array({{{"apiVersion", kRuntimeEnvs.apiVersion()},
                       {"kind", kRuntimeEnvs.kind},
                       {"name", meta.name},
                       {"uid", meta.uid},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

json buildJob(const VerificationInput& in, const VerifySpec& spec, int64_t run, size_t index,
              const Target& t) {
  const ObjectMeta meta = decodeMeta(*in.runtimeEnv);
  const std::string name = verificationJobName(meta.name, run, index);
  const bool gpu = t.product != "cpu";
  json labels = {{kVerifyRuntimeEnvLabel, dnsLabelName(meta.name)},
                 {kVerifyRunLabel, std::to_string(run)},
                 {kVerifyGpuProductLabel, dnsLabelName(t.product)}};
  json podAnnotations = json::object();
  for (const auto& [k, v] : spec.podAnnotations) podAnnotations[k] = v;
  // The pod declares the revision it verifies, so admission checks its main
  // container against it and admits the CLI init containers (pod_validator.h).
  json podLabels = labels;
  podLabels[kRuntimeEnvLabel] = meta.name;
  podAnnotations[kClosureHashAnnotation] = in.closureHash;
  podAnnotations[kRuntimeRevisionAnnotation] = std::to_string(in.revision);
  json env = json::array({{{"name", "LOCKSTEP_RUNTIME_ENV"}, {"value", meta.name}},
                          {{"name", "LOCKSTEP_CLOSURE_HASH"}, {"value", in.closureHash}},
                          {{"name", "LOCKSTEP_GPU_PRODUCT"}, {"value", t.product}}});
  VerifyContainers vc;
  vc.cliImage = in.cliImage;
  vc.runtimeImage = in.image;
  vc.closureConfigMap = closureConfigMapName(meta.name, in.revision);
  vc.prefix = spec.prefix;
  vc.gpus = gpu ? 1 : 0;
  // The checks are init containers (admission trusts the CLI image there only);
  // the main container is the smoke command on the runtime image by digest
  // (without one, the runtime image's `true`: it starts on the node).
  json smoke = {{"name", "smoke"},
                {"image", in.image},
                {"command", json::array({"sh", "-c", spec.smoke.empty() ? "true" : spec.smoke})},
                {"env", env},
                {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  if (gpu) smoke["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  json podSpec = {
      {"restartPolicy", "Never"},
      {"automountServiceAccountToken", false},
      {"initContainers", json::array({verifyEnvContainer(vc), verifyHostContainer(vc)})},
      {"containers", json::array({std::move(smoke)})},
      {"volumes", verifyVolumes(vc)}};
  if (gpu) {
    podSpec["nodeSelector"] = {{"kubernetes.io/hostname", t.node}, {kGpuProductLabel, t.product}};
  }
  if (!spec.tolerations.empty()) podSpec["tolerations"] = spec.tolerations;
  json podMeta = {{"labels", podLabels}, {"annotations", podAnnotations}};
  return json{{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata",
               {{"name", name},
                {"namespace", meta.ns},
                {"labels", labels},
                {"ownerReferences", ownedBy(meta)}}},
              {"spec",
               {{"backoffLimit", 0},
                {"activeDeadlineSeconds", spec.timeoutSeconds},
                {"template", {{"metadata", podMeta}, {"spec", podSpec}}}}}};
}

// The closure ConfigMap of `revision` (its pair's hash, CUDA and driver; the lock
// text, format, platform and environment of the current resolution).
json closureConfigMapOf(const VerificationInput& in, int64_t revision,
                        const std::string& closureHash, const std::string& cuda,
                        const std::string& minDriver) {
  const ObjectMeta meta = decodeMeta(*in.runtimeEnv);
  json runtime = {{"closureHash", closureHash},    {"format", in.format}, {"platform", in.platform},
                  {"environment", in.environment}, {"cuda", cuda},        {"minDriver", minDriver}};
  return json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata",
               {{"name", closureConfigMapName(meta.name, revision)},
                {"namespace", meta.ns},
                {"labels",
                 {{kVerifyRuntimeEnvLabel, dnsLabelName(meta.name)},
                  {kRuntimeRevisionAnnotation, std::to_string(revision)}}},
                {"ownerReferences", ownedBy(meta)}}},
              {"data", {{"lock", in.lockText}, {"runtime.json", runtime.dump(2) + "\n"}}}};
}

json closureConfigMap(const VerificationInput& in) {
  return closureConfigMapOf(in, in.revision, in.closureHash, in.cuda, in.minDriver);
}

const kube::Object* cachedClosure(const VerificationInput& in, const std::string& name) {
  for (const auto& c : in.closureConfigMaps) {
    if (kube::name(*c) == name && !kube::isBeingDeleted(*c)) return c.get();
  }
  return nullptr;
}

// Pinned revisions other than the current one: those with a closure ConfigMap,
// and those the operator can write one for (resolved from the current lock bytes).
void pinnedClosures(const VerificationInput& in, VerificationPlan& plan) {
  const std::string rte = kube::name(*in.runtimeEnv);
  std::string currentDigest;
  for (const auto& rev : in.revisions) {
    if (rev.number == in.revision) currentDigest = rev.lockDigest;
  }
  std::vector<int64_t> have = {in.revision};
  for (const auto& rev : in.revisions) {
    if (rev.number == in.revision || !rev.pinned()) continue;
    if (cachedClosure(in, closureConfigMapName(rte, rev.number)) != nullptr) {
      have.push_back(rev.number);
    } else if (!currentDigest.empty() && rev.lockDigest == currentDigest) {
      plan.pinnedClosureConfigMaps.push_back(
          closureConfigMapOf(in, rev.number, rev.closureHash, rev.cuda, rev.minDriver));
      have.push_back(rev.number);
    }
  }
  std::sort(have.begin(), have.end());
  plan.closureRevisions = std::move(have);
}

const kube::Object* findJob(const VerificationInput& in, const std::string& name) {
  for (const auto& j : in.jobs) {
    if (kube::name(*j) == name) return j.get();
  }
  return nullptr;
}

std::optional<json> jobCondition(const kube::Object& job, const char* type) {
  auto c = kube::findCondition(decode::array(decode::object(job, "status"), "conditions"), type);
  if (c && decode::string(*c, "status") == kStatusTrue) return c;
  return std::nullopt;
}

// The first container (init containers first) of the Job's pods that ended
// with a non-zero exit code: "<container> exited <code>: <message>".
std::optional<std::string> failureOf(const VerificationInput& in, const std::string& job,
                                     std::string* node) {
  for (const auto& pod : in.pods) {
    const json& labels = decode::object(decode::object(*pod, "metadata"), "labels");
    if (decode::string(labels, "batch.kubernetes.io/job-name") != job &&
        decode::string(labels, "job-name") != job)
      continue;
    if (std::string n = decode::string(decode::object(*pod, "spec"), "nodeName"); !n.empty())
      *node = n;
    if (auto why = containerFailure(*pod, false, kMaxMessage)) return why;
  }
  return std::nullopt;
}

// The closure ConfigMaps of revisions that are neither `current` nor pinned.
std::vector<std::string> staleClosureConfigMaps(const VerificationInput& in, int64_t current) {
  std::vector<std::string> out;
  const std::string rte = kube::name(*in.runtimeEnv);
  for (const auto& c : in.closureConfigMaps) {
    if (kube::isBeingDeleted(*c)) continue;
    bool keep = current > 0 && kube::name(*c) == closureConfigMapName(rte, current);
    for (int64_t rev : in.pinnedRevisions)
      keep = keep || kube::name(*c) == closureConfigMapName(rte, rev);
    if (!keep) out.push_back(kube::name(*c));
  }
  return out;
}

std::string where(const VerificationResult& r) {
  if (r.gpuProduct == "cpu") return "a CPU node" + (r.node.empty() ? "" : " (node " + r.node + ")");
  return r.gpuProduct + " (node " + r.node + ", driver " + r.driver + ")";
}

// Folds the Jobs' outcomes into the run's results; true when a result is still open.
bool foldResults(const VerificationInput& in, VerificationStatus& v, int64_t& requeue) {
  bool open = false;
  for (VerificationResult& r : v.results) {
    if (r.result != kResultRunning) continue;
    const kube::Object* job = findJob(in, r.job);
    if (job == nullptr) {
      if (in.nowUnix - kube::unixSecondsOf(v.startedAt) > kJobGoneAfterSeconds) {
        r.result = kResultFailed;
        r.message = "Job " + r.job + " is gone (deleted before it finished)";
        r.finishedAt = in.now;
      } else {
        open = true;
      }
      continue;
    }
    if (jobCondition(*job, "Complete")) {
      r.result = kResultPassed;
      r.finishedAt = in.now;
      std::string node = r.node;
      (void)failureOf(in, r.job, &node);
      r.node = node;
      continue;
    }
    if (auto failed = jobCondition(*job, "Failed")) {
      std::string node = r.node;
      auto why = failureOf(in, r.job, &node);
      const int64_t since = kube::unixSecondsOf(decode::string(*failed, "lastTransitionTime"));
      if (!why && in.nowUnix - since < kPodLagSeconds) {
        open = true;  // the pod's final status may not be in the cache yet
        requeue = requeue == 0 ? 2 : std::min<int64_t>(requeue, 2);
        continue;
      }
      r.result = kResultFailed;
      r.node = node;
      r.finishedAt = in.now;
      r.message = why ? *why
                      : "Job " + r.job + " failed: " + decode::string(*failed, "reason") +
                            (decode::string(*failed, "message").empty()
                                 ? ""
                                 : " (" + decode::string(*failed, "message") + ")");
      continue;
    }
    open = true;
  }
  return open;
}

std::string verdictMessage(const VerificationStatus& v) {
  std::string passed, failed;
  for (const VerificationResult& r : v.results) {
    if (r.result == kResultFailed) {
      failed += (failed.empty() ? "" : "; ") + where(r) + ": " + r.message;
    } else {
      passed += (passed.empty() ? "" : ", ") + where(r);
    }
  }
  const std::string rev = "revision " + std::to_string(v.revision);
  if (!failed.empty()) return rev + " failed on " + failed + " (run " + std::to_string(v.run) + ")";
  return rev + " passed verify-env, verify-host and the smoke command on " + passed + " (run " +
         std::to_string(v.run) + ", started " + v.startedAt + ")";
}

}  // namespace

std::string verificationJobName(const std::string& runtimeEnv, int64_t run, size_t index) {
  return dnsLabelName(runtimeEnv + "-verify-" + std::to_string(run) + "-" + std::to_string(index));
}

VerificationPlan planVerification(const VerificationInput& in) {
  VerificationPlan plan;
  const VerificationStatus old = decodeVerificationStatus(*in.runtimeEnv);
  // The closure ConfigMap of the current revision, for the verification Jobs and
  // the onStart init containers; those of pinned revisions are kept.
  const bool closureWanted = in.spec && (!in.spec->schedule.empty() || in.spec->onStart);
  if (!closureWanted) {
    plan.closureConfigMapsToDelete = staleClosureConfigMaps(in, 0);
    plan.closureRevisions = std::vector<int64_t>();
  } else if (in.revision > 0 && !in.lockText.empty()) {
    pinnedClosures(in, plan);
    json cm = closureConfigMap(in);
    const kube::Object* cached = nullptr;
    for (const auto& c : in.closureConfigMaps) {
      if (kube::name(*c) == cm["metadata"]["name"]) cached = c.get();
    }
    if (cached == nullptr || decode::object(*cached, "data") != cm["data"] ||
        kube::labels(*cached).count(kVerifyRuntimeEnvLabel) == 0) {
      plan.closureConfigMap = std::move(cm);
    }
    plan.closureConfigMapsToDelete = staleClosureConfigMaps(in, in.revision);
  }
  if (!in.spec || in.spec->schedule.empty()) {
    // Scheduled verification off: nothing of it is left behind.
    plan.status = nullptr;
    for (const auto& j : in.jobs) {
      if (!kube::isBeingDeleted(*j)) plan.jobsToDelete.push_back(kube::name(*j));
    }
    return plan;
  }
  plan.enabled = true;
  const VerifySpec& spec = *in.spec;
  VerificationStatus v = old;
  auto schedule = verify::parseSchedule(spec.schedule);
  if (!schedule.isOk()) {
    plan.status = old.run > 0 ? encodeVerificationStatus(old) : json(nullptr);
    plan.verified = kube::Condition{kConditionVerified, kStatusFalse, kReasonInvalidSchedule,
                                    "spec.verify.schedule: " + schedule.status().message()};
    return plan;
  }
  if (in.cliImage.empty()) {
    plan.status = old.run > 0 ? encodeVerificationStatus(old) : json(nullptr);
    plan.verified = kube::Condition{
        kConditionVerified, kStatusFalse, "NoCliImage",
        "the operator runs without --cli-image (chart value cliImage): verification Jobs need "
        "the lockstep CLI image to run verify-env and verify-host"};
    return plan;
  }
  if (in.revision == 0 || in.lockText.empty()) {
    // Nothing resolved now: no new run; the recorded state stays.
    plan.status = old.run > 0 ? encodeVerificationStatus(old) : json(nullptr);
    return plan;
  }

  int64_t requeue = 0;
  bool running = v.run > 0 && v.result == kResultRunning && foldResults(in, v, requeue);
  if (v.run > 0 && v.result == kResultRunning && !running) {
    // The run finished now.
    bool anyFailed =
        std::any_of(v.results.begin(), v.results.end(),
                    [](const VerificationResult& r) { return r.result == kResultFailed; });
    v.result = anyFailed ? kResultFailed : kResultPassed;
    v.finishedAt = in.now;
    v.verdict = {v.run, v.result, v.startedAt, v.finishedAt, verdictMessage(v)};
    plan.finishedResult = anyFailed ? "failed" : "passed";
    plan.events.push_back({anyFailed ? kube::kEventTypeWarning : kube::kEventTypeNormal,
                           anyFailed ? kReasonVerificationFailed : kReasonVerificationPassed,
                           v.verdict.message});
  }

  // Due: never ran, a new revision (at once), or the schedule's next time came.
  const bool newRevision = v.run == 0 || v.revision != in.revision;
  std::optional<int64_t> next;
  if (v.run > 0) next = verify::nextRun(*schedule, kube::unixSecondsOf(v.startedAt));
  const bool scheduled = !running && next && *next <= in.nowUnix;
  if (newRevision || scheduled) {
    std::vector<Target> targets = targetsOf(in);
    if (targets.empty()) {
      plan.status = v.run > 0 ? encodeVerificationStatus(v) : json(nullptr);
      plan.verified = kube::Condition{
          kConditionVerified, newRevision ? kStatusFalse : kStatusUnknown, kReasonNoCompatibleNodes,
          "no schedulable GPU node reports an NVIDIA driver >= " +
              (in.minDriver.empty() ? std::string("any") : in.minDriver) + " (CUDA " + in.cuda +
              "): revision " + std::to_string(in.revision) + " cannot be verified"};
      if (newRevision) plan.status = nullptr;
      return plan;
    }
    if (newRevision) v.verdict = {};
    v.run = std::max(v.run, old.run) + 1;
    v.revision = in.revision;
    v.closureHash = in.closureHash;
    v.startedAt = in.now;
    v.finishedAt.clear();
    v.result = kResultRunning;
    v.results.clear();
    std::string on;
    for (size_t i = 0; i < targets.size(); ++i) {
      const Target& t = targets[i];
      v.results.push_back({t.product, t.node, t.driver,
                           verificationJobName(kube::name(*in.runtimeEnv), v.run, i),
                           kResultRunning, "", ""});
      plan.jobsToCreate.push_back(buildJob(in, spec, v.run, i, t));
      on += (on.empty() ? "" : ", ") + where(v.results.back());
    }
    plan.events.push_back({kube::kEventTypeNormal, "VerificationStarted",
                           "run " + std::to_string(v.run) + " verifies revision " +
                               std::to_string(v.revision) + " on " + on +
                               (newRevision ? " (a new revision)" : " (scheduled)")});
    running = true;
    next = verify::nextRun(*schedule, in.nowUnix);
  }
  // Only the latest run's Jobs are kept (their pods hold the logs).
  const std::string keep = std::to_string(v.run);
  for (const auto& j : in.jobs) {
    if (kube::isBeingDeleted(*j)) continue;
    if (kube::label(*j, kVerifyRunLabel).value_or("") != keep)
      plan.jobsToDelete.push_back(kube::name(*j));
  }

  v.nextRunAt = next ? kube::timeOfUnixSeconds(*next) : "";
  v.staleAfter.clear();
  if (v.verdict.run > 0) {
    if (auto due = verify::nextRun(*schedule, kube::unixSecondsOf(v.verdict.startedAt)))
      v.staleAfter = kube::timeOfUnixSeconds(*due + spec.timeoutSeconds);
  }
  if (v.verdict.run > 0) {
    const bool passed = v.verdict.result == kResultPassed;
    plan.verified = kube::Condition{kConditionVerified, passed ? kStatusTrue : kStatusFalse,
                                    passed ? kReasonVerificationPassed : kReasonVerificationFailed,
                                    v.verdict.message};
  } else {
    std::string on;
    for (const VerificationResult& r : v.results) on += (on.empty() ? "" : ", ") + where(r);
    plan.verified = kube::Condition{kConditionVerified, kStatusUnknown, kReasonVerificationRunning,
                                    "run " + std::to_string(v.run) + " verifies revision " +
                                        std::to_string(v.revision) + " on " + on};
  }
  plan.status = encodeVerificationStatus(v);
  if (running) requeue = requeue == 0 ? 15 : std::min<int64_t>(requeue, 15);
  if (!running && next) {
    const int64_t wait = std::max<int64_t>(1, *next - in.nowUnix);
    requeue = requeue == 0 ? wait : std::min(requeue, wait);
  }
  plan.requeueAfterSeconds = requeue;
  return plan;
}

}  // namespace lockstep::controllers
