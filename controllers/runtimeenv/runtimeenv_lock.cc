#include "controllers/runtimeenv/runtimeenv_lock.h"

#include <map>
#include <utility>

#include "api/v1alpha1/conditions.h"
#include "closure/include_reader.h"
#include "controllers/runtimeenv/runtimeenv_plan.h"

namespace lockstep::controllers {

LockResolution resolveLock(const api::v1alpha1::RuntimeEnv& rte, const kube::Object* configMap) {
  using nlohmann::json;
  using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): the kinds' vocabulary
  const LockSource& lock = rte.spec.lock;
  LockResolution r;
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
  r.lockDigest = "sha256:" + closure::sha256Hex(text);
  r.lockText = std::move(text);
  r.closure = std::move(*c);
  return r;
}

}  // namespace lockstep::controllers
