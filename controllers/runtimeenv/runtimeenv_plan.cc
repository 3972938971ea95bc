#include "controllers/runtimeenv/runtimeenv_plan.h"

#include <map>

#include "api/image_ref.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_env.h"
#include "closure/closure.h"
#include "closure/cuda.h"
#include "closure/include_reader.h"
#include "operator/kube/event_sink.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): the kinds' vocabulary
using kube::findCondition;
using kube::setCondition;

// The outcome of resolving the lock: a closure or a classified failure.
struct Resolution {
  bool ok = false;
  std::string reason;
  std::string message;
  closure::Closure closure;
};

Resolution resolve(const RuntimeEnv& rte, const kube::ObjectPtr& configMap) {
  const LockSource& lock = rte.spec.lock;
  Resolution r;
  const std::string& image = rte.spec.image;
  if (!isDigestPinned(image)) {
    r.reason = kReasonImageNotPinned;
    r.message = "spec.image \"" + image +
                "\" is not pinned by digest; use repo@sha256:<64 hex> so pods can be checked "
                "against the exact image built from this lock";
    return r;
  }
  std::string text;
  std::string source;
  // pip `-r other.txt` resolves to other keys of the same ConfigMap.
  std::map<std::string, std::string> siblings;
  if (lock.inlineText) {
    text = *lock.inlineText;
    source = "spec.lock.inline";
  } else if (lock.configMapRef) {
    const std::string& cm = lock.configMapRef->name;
    const std::string& key = lock.configMapRef->key;
    source = "configmap/" + cm + "[" + key + "]";
    if (!configMap) {
      r.reason = kReasonLockNotFound;
      r.message = "ConfigMap \"" + cm + "\" named by spec.lock.configMapRef does not exist";
      return r;
    }
    const json& data = decode::object(*configMap, "data");
    if (!data.contains(key) || !data[key].is_string()) {
      r.reason = kReasonLockNotFound;
      r.message = "ConfigMap \"" + cm + "\" has no key \"" + key + "\" in data";
      if (decode::object(*configMap, "binaryData").contains(key)) {
        r.message += " (it is in binaryData; a lock file is text: put it in data)";
      }
      return r;
    }
    text = data[key].get<std::string>();
    for (const auto& [k, v] : data.items()) {
      if (v.is_string()) siblings[k] = v.get<std::string>();
    }
  } else {
    r.reason = kReasonLockParseError;
    r.message = "spec.lock needs inline or configMapRef";
    return r;
  }

  closure::ClosureOptions options;
  if (lock.format) {
    auto f = closure::parseFormatName(*lock.format);
    if (!f.isOk()) {
      r.reason = kReasonLockParseError;
      r.message = "spec.lock.format: " + f.status().message();
      return r;
    }
    options.format = *f;
  }
  options.platform = lock.platform;
  options.environment = lock.environment;
  options.allowUnhashed = rte.spec.allowUnhashed;
  options.sourceName = source;
  closure::MapIncludeReader includes(std::move(siblings));
  options.includes = &includes;
  closure::RejectReason why = closure::RejectReason::kNone;
  auto c = closure::computeClosure(text, options, &why);
  if (!c.isOk()) {
    switch (why) {
      case closure::RejectReason::kUnhashedPackage:
        r.reason = kReasonUnhashedPackage;
        break;
      case closure::RejectReason::kTooLarge:
        r.reason = kReasonLockTooLarge;
        break;
      default:
        r.reason = kReasonLockParseError;
        break;
    }
    r.message = c.status().message();
    return r;
  }
  r.ok = true;
  r.reason = kReasonResolved;
  r.closure = std::move(*c);
  return r;
}

}  // namespace

bool isDigestPinned(const std::string& image) {
  auto ref = api::parseImageRef(image);
  return ref.isOk() && ref->pinned();
}

RuntimeEnvPlan planRuntimeEnv(const RuntimeEnvObserved& o, const std::string& now) {
  RuntimeEnvPlan plan;
  const RuntimeEnv rte = decodeRuntimeEnv(*o.runtimeEnv);
  const int64_t generation = rte.meta.generation;
  const json& oldStatus = decode::object(*o.runtimeEnv, "status");
  json status = oldStatus;
  status["observedGeneration"] = generation;
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();

  Resolution r = resolve(rte, o.configMap);
  const std::string& oldHash = rte.status.closureHash;
  const auto oldReady = findCondition(rte.status.conditions, kConditionReady);
  const std::string oldReason = oldReady ? decode::string(*oldReady, "reason") : "";

  if (!r.ok) {
    // Keep the last resolved closure for reference; Ready=False stops admission using it.
    setCondition(conditions, {kConditionReady, kStatusFalse, r.reason, r.message}, generation, now);
    setCondition(conditions, {kConditionStalled, kStatusTrue, r.reason, r.message}, generation,
                 now);
    if (oldReason != r.reason) {
      plan.events.push_back({kube::kEventTypeWarning, r.reason, r.message});
    }
  } else {
    const closure::Closure& c = r.closure;
    std::string cuda = rte.spec.accelerator.cuda.value_or(c.cuda);
    std::string minDriver = rte.spec.accelerator.minDriver;
    if (minDriver.empty() && !cuda.empty()) {
      minDriver = closure::minDriverForCuda(cuda).value_or("");
    }
    status["closureHash"] = c.closureHash;
    status["shortHash"] = c.closureHash.substr(7, 12);
    status["format"] = std::string(closure::formatName(c.format));
    status["platform"] = c.platform;
    status["packageCount"] = c.packageCount();
    status["weak"] = c.weak;
    status["image"] = rte.spec.image;
    status.erase("cuda");
    status.erase("minDriver");
    status.erase("compatibleNodes");
    std::string readyMessage = "closure " + c.closureHash + ": " +
                               std::to_string(c.packageCount()) + " packages (" +
                               std::string(closure::formatName(c.format)) +
                               (c.platform.empty() ? "" : ", " + c.platform) + ")";
    if (c.weak) readyMessage += "; weak: " + std::to_string(c.unhashed.size()) + " unhashed";
    setCondition(conditions, {kConditionReady, kStatusTrue, kReasonResolved, readyMessage},
                 generation, now);
    setCondition(conditions, {kConditionStalled, kStatusFalse, kReasonResolved, ""}, generation,
                 now);

    if (!cuda.empty()) {
      status["cuda"] = cuda;
      if (!minDriver.empty()) status["minDriver"] = minDriver;
      int64_t compatible = 0;
      for (const auto& node : o.nodes) {
        if (decode::boolean(decode::object(*node, "spec"), "unschedulable", false)) continue;
        auto driver = closure::driverFromGfdLabels(kube::labels(*node));
        if (driver && closure::driverSatisfies(*driver, minDriver)) ++compatible;
      }
      status["compatibleNodes"] = compatible;
      if (compatible == 0) {
        std::string m = "no schedulable node reports an NVIDIA driver >= " +
                        (minDriver.empty() ? std::string("any") : minDriver) + " (CUDA " + cuda +
                        "); GPU feature discovery labels nvidia.com/cuda.driver.* are read";
        setCondition(conditions, {kConditionDegraded, kStatusTrue, kReasonNoCompatibleNodes, m},
                     generation, now);
      } else {
        setCondition(conditions,
                     {kConditionDegraded, kStatusFalse, kReasonCompatibleNodesFound,
                      std::to_string(compatible) + " GPU node(s) satisfy driver >= " + minDriver},
                     generation, now);
      }
    } else {
      setCondition(conditions, {kConditionDegraded, kStatusFalse, kReasonNoAcceleratorRequired, ""},
                   generation, now);
    }

    if (c.closureHash != oldHash) {
      plan.events.push_back({kube::kEventTypeNormal, kReasonResolved, readyMessage});
    }
  }
  plan.statusChanged = status != oldStatus;
  plan.status = std::move(status);
  return plan;
}

ExecutionPlan executionPlan(const RuntimeEnvPlan& plan, const RuntimeEnvObserved& o) {
  ExecutionPlan out;
  const std::string ns = kube::namespaceOf(*o.runtimeEnv);
  for (const auto& e : plan.events)
    out.events.push_back({o.runtimeEnv, e.type, e.reason, e.message});
  if (plan.statusChanged) {
    PlannedApply a;
    a.resource = kRuntimeEnvs;
    a.object = statusApply(kRuntimeEnvs, ns, kube::name(*o.runtimeEnv), plan.status);
    out.status = std::move(a);
  }
  return out;
}

}  // namespace lockstep::controllers
