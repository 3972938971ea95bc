#include "controllers/runtimeenv/runtimeenv_plan.h"

#include <cctype>
#include <map>

#include "closure/closure.h"
#include "closure/cuda.h"
#include "closure/include_reader.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

std::string str(const json& j, const json::json_pointer& p) {
  return j.contains(p) && j.at(p).is_string() ? j.at(p).get<std::string>() : std::string();
}

std::map<std::string, std::string> labelsOf(const json& o) {
  std::map<std::string, std::string> out;
  const json::json_pointer p("/metadata/labels");
  if (!o.contains(p) || !o.at(p).is_object()) return out;
  for (const auto& [k, v] : o.at(p).items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

// The outcome of resolving the lock: a closure or a classified failure.
struct Resolution {
  bool ok = false;
  std::string reason;
  std::string message;
  closure::Closure closure;
};

Resolution resolve(const RuntimeEnvObserved& o) {
  const json& spec = o.runtimeEnv.value("spec", json::object());
  const json lock = spec.value("lock", json::object());
  Resolution r;
  std::string image = spec.value("image", "");
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
  if (lock.contains("inline") && lock["inline"].is_string()) {
    text = lock["inline"].get<std::string>();
    source = "spec.lock.inline";
  } else if (lock.contains("configMapRef")) {
    std::string cm = lock["configMapRef"].value("name", "");
    std::string key = lock["configMapRef"].value("key", "");
    source = "configmap/" + cm + "[" + key + "]";
    if (!o.configMap) {
      r.reason = kReasonLockNotFound;
      r.message = "ConfigMap \"" + cm + "\" named by spec.lock.configMapRef does not exist";
      return r;
    }
    const json data = o.configMap->value("data", json::object());
    if (!data.contains(key) || !data[key].is_string()) {
      r.reason = kReasonLockNotFound;
      r.message = "ConfigMap \"" + cm + "\" has no key \"" + key + "\" in data";
      if (o.configMap->contains("binaryData") && (*o.configMap)["binaryData"].contains(key)) {
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
  if (lock.contains("format") && lock["format"].is_string()) {
    auto f = closure::parseFormatName(lock["format"].get<std::string>());
    if (!f.isOk()) {
      r.reason = kReasonLockParseError;
      r.message = "spec.lock.format: " + f.status().message();
      return r;
    }
    options.format = *f;
  }
  options.platform = lock.value("platform", "");
  options.environment = lock.value("environment", "");
  options.allowUnhashed = spec.value("allowUnhashed", false);
  options.sourceName = source;
  closure::MapIncludeReader includes(std::move(siblings));
  options.includes = &includes;
  auto c = closure::computeClosure(text, options);
  if (!c.isOk()) {
    // The closure library words a missing digest as "... package X has no artifact digest ...".
    bool unhashed = c.status().message().find("has no artifact digest") != std::string::npos;
    if (c.status().code() == Code::kResourceExhausted) {
      r.reason = kReasonLockTooLarge;
    } else {
      r.reason = unhashed ? kReasonUnhashedPackage : kReasonLockParseError;
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
  auto at = image.find("@sha256:");
  if (at == std::string::npos || at == 0) return false;
  std::string hex = image.substr(at + 8);
  if (hex.size() != 64) return false;
  for (char ch : hex) {
    if (!std::isxdigit(static_cast<unsigned char>(ch)) ||
        std::isupper(static_cast<unsigned char>(ch))) {
      return false;
    }
  }
  for (char ch : image.substr(0, at)) {
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == '@') return false;
  }
  return true;
}

RuntimeEnvPlan planRuntimeEnv(const RuntimeEnvObserved& o, const std::string& now) {
  RuntimeEnvPlan plan;
  const json& rte = o.runtimeEnv;
  const int64_t generation = rte.value("/metadata/generation"_json_pointer, int64_t{0});
  const std::string name = str(rte, "/metadata/name"_json_pointer);
  const json oldStatus = rte.value("status", json::object());
  json status = oldStatus;
  status["observedGeneration"] = generation;
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();

  Resolution r = resolve(o);
  const std::string oldHash = oldStatus.value("closureHash", "");
  const auto oldReady = findCondition(oldStatus.value("conditions", json::array()), "Ready");
  const std::string oldReason = oldReady ? oldReady->value("reason", "") : "";

  if (!r.ok) {
    // Keep the last resolved closure for reference; Ready=False stops admission using it.
    setCondition(conditions, {"Ready", "False", r.reason, r.message}, generation, now);
    setCondition(conditions, {"Stalled", "True", r.reason, r.message}, generation, now);
    if (oldReason != r.reason) plan.events.push_back({"", "Warning", r.reason, r.message});
  } else {
    const closure::Closure& c = r.closure;
    const json spec = rte.value("spec", json::object());
    const json accel = spec.value("accelerator", json::object());
    std::string cuda = accel.value("cuda", c.cuda);
    std::string minDriver = accel.value("minDriver", "");
    if (minDriver.empty() && !cuda.empty()) {
      minDriver = closure::minDriverForCuda(cuda).value_or("");
    }
    status["closureHash"] = c.closureHash;
    status["shortHash"] = c.closureHash.substr(7, 12);
    status["format"] = std::string(closure::formatName(c.format));
    status["platform"] = c.platform;
    status["packageCount"] = c.packageCount();
    status["weak"] = c.weak;
    status["image"] = spec.value("image", "");
    status.erase("cuda");
    status.erase("minDriver");
    status.erase("compatibleNodes");
    std::string readyMessage = "closure " + c.closureHash + ": " +
                               std::to_string(c.packageCount()) + " packages (" +
                               std::string(closure::formatName(c.format)) +
                               (c.platform.empty() ? "" : ", " + c.platform) + ")";
    if (c.weak) readyMessage += "; weak: " + std::to_string(c.unhashed.size()) + " unhashed";
    setCondition(conditions, {"Ready", "True", kReasonResolved, readyMessage}, generation, now);
    setCondition(conditions, {"Stalled", "False", kReasonResolved, ""}, generation, now);

    if (!cuda.empty()) {
      status["cuda"] = cuda;
      if (!minDriver.empty()) status["minDriver"] = minDriver;
      int64_t compatible = 0;
      for (const auto& node : o.nodes) {
        if (node.value("/spec/unschedulable"_json_pointer, false)) continue;
        auto driver = closure::driverFromGfdLabels(labelsOf(node));
        if (driver && closure::driverSatisfies(*driver, minDriver)) ++compatible;
      }
      status["compatibleNodes"] = compatible;
      if (compatible == 0) {
        std::string m = "no schedulable node reports an NVIDIA driver >= " +
                        (minDriver.empty() ? std::string("any") : minDriver) + " (CUDA " + cuda +
                        "); GPU feature discovery labels nvidia.com/cuda.driver.* are read";
        setCondition(conditions, {"Degraded", "True", kReasonNoCompatibleNodes, m}, generation,
                     now);
      } else {
        setCondition(conditions,
                     {"Degraded", "False", "CompatibleNodesFound",
                      std::to_string(compatible) + " GPU node(s) satisfy driver >= " + minDriver},
                     generation, now);
      }
    } else {
      setCondition(conditions, {"Degraded", "False", "NoAcceleratorRequired", ""}, generation, now);
    }

    if (c.closureHash != oldHash) {
      plan.events.push_back({"", "Normal", kReasonResolved, readyMessage});
    }

    // Releases validated on another closure are stale; never re-pointed silently.
    for (const auto& mr : o.releases) {
      const std::string mrName = str(mr, "/metadata/name"_json_pointer);
      std::string validated = str(mr, "/status/validatedClosureHash"_json_pointer);
      if (validated.empty()) validated = str(mr, "/spec/closureHash"_json_pointer);
      Condition want;
      want.type = "Stale";
      if (validated != c.closureHash) {
        want.status = "True";
        want.reason = kReasonClosureHashChanged;
        want.message = "RuntimeEnv " + name + " now resolves to " + c.closureHash +
                       "; this release was validated on " + validated;
      } else {
        want.status = "False";
        want.reason = kReasonClosureHashMatches;
        want.message = "RuntimeEnv " + name + " resolves to the validated closure";
      }
      auto have =
          findCondition(mr.value("/status/conditions"_json_pointer, json::array()), "Stale");
      bool same = have && have->value("status", "") == want.status &&
                  have->value("reason", "") == want.reason &&
                  have->value("message", "") == want.message;
      if (same) continue;
      // A fresh release that matches needs no condition written at all.
      if (!have && want.status == "False") continue;
      plan.releaseConditions.push_back(
          {mrName, mr.value("/metadata/generation"_json_pointer, int64_t{0}), want});
      if (want.status == "True") {
        plan.events.push_back({mrName, "Warning", "Stale", want.message});
      }
    }
  }
  plan.statusChanged = status != oldStatus;
  plan.status = std::move(status);
  return plan;
}

}  // namespace lockstep::controllers
