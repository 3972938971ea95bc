#include "api/v1alpha1/runtime_env.h"

namespace lockstep::api::v1alpha1 {

RuntimeEnv decodeRuntimeEnv(const nlohmann::json& object) {
  RuntimeEnv r;
  r.meta = decodeMeta(object);
  const nlohmann::json& spec = decode::object(object, "spec");
  const nlohmann::json& lock = decode::object(spec, "lock");
  r.spec.lock.inlineText = decode::optionalString(lock, "inline");
  if (decode::member(lock, "configMapRef") != nullptr) {
    const nlohmann::json& ref = decode::object(lock, "configMapRef");
    r.spec.lock.configMapRef =
        ConfigMapKeyRef{decode::string(ref, "name"), decode::string(ref, "key")};
  }
  r.spec.lock.format = decode::optionalString(lock, "format");
  r.spec.lock.platform = decode::string(lock, "platform");
  r.spec.lock.environment = decode::string(lock, "environment");
  r.spec.allowUnhashed = decode::boolean(spec, "allowUnhashed", false);
  r.spec.image = decode::string(spec, "image");
  const nlohmann::json& accel = decode::object(spec, "accelerator");
  r.spec.accelerator.cuda = decode::optionalString(accel, "cuda");
  r.spec.accelerator.minDriver = decode::string(accel, "minDriver");
  r.spec.revisionHistoryLimit =
      decode::integer(spec, "revisionHistoryLimit", kDefaultRevisionHistoryLimit);

  const nlohmann::json& status = decode::object(object, "status");
  r.status.observedGeneration = decode::integer(status, "observedGeneration", -1);
  r.status.closureHash = decode::string(status, "closureHash");
  r.status.format = decode::string(status, "format");
  r.status.platform = decode::string(status, "platform");
  r.status.packageCount = decode::integer(status, "packageCount", 0);
  r.status.weak = decode::boolean(status, "weak", false);
  r.status.cuda = decode::string(status, "cuda");
  r.status.minDriver = decode::string(status, "minDriver");
  if (const auto* n = decode::member(status, "compatibleNodes"); n && n->is_number_integer()) {
    r.status.compatibleNodes = n->get<int64_t>();
  }
  r.status.image = decode::string(status, "image");
  r.status.currentRevision = decode::integer(status, "currentRevision", 0);
  r.status.revisions = decodeRevisions(status);
  if (const auto* c = decode::member(status, "closureRevisions"); c && c->is_array()) {
    std::vector<int64_t> revs;
    for (const auto& n : *c) {
      if (n.is_number_integer()) revs.push_back(n.get<int64_t>());
    }
    r.status.closureRevisions = std::move(revs);
  }
  r.status.conditions = decode::array(status, "conditions");
  return r;
}

bool RuntimeEnv::ready() const {
  return readyForGeneration(status.conditions, status.observedGeneration, meta.generation) &&
         !status.closureHash.empty();
}

const RuntimeRevision* RuntimeEnv::revision(int64_t number) const {
  for (const RuntimeRevision& r : status.revisions) {
    if (r.number == number) return &r;
  }
  return nullptr;
}

std::string RuntimeEnv::configMapKey() const {
  if (!spec.lock.configMapRef || spec.lock.configMapRef->name.empty()) return "";
  return ObjectMeta{spec.lock.configMapRef->name, meta.ns, "", 0}.key();
}

std::vector<std::string> indexByConfigMap(const nlohmann::json& runtimeEnv) {
  std::string k = decodeRuntimeEnv(runtimeEnv).configMapKey();
  return k.empty() ? std::vector<std::string>{} : std::vector<std::string>{k};
}

}  // namespace lockstep::api::v1alpha1
