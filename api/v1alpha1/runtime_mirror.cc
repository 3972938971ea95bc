#include "api/v1alpha1/runtime_mirror.h"

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_release.h"
#include "operator/kube/conditions.h"

namespace lockstep::api::v1alpha1 {

using nlohmann::json;

StatusOr<std::optional<MirrorSpec>> decodeMirrorSpec(const json& runtimeEnv) {
  const json* m = decode::member(decode::object(runtimeEnv, "spec"), "mirror");
  if (m == nullptr || m->is_null()) return std::optional<MirrorSpec>();
  auto wrong = [](const std::string& field, const std::string& what, const json& found) {
    return Status(Code::kInvalidArgument, field + ": expected " + what + ", found " + found.dump());
  };
  if (!m->is_object()) return wrong("spec.mirror", "an object", *m);
  MirrorSpec out;
  const json* repo = decode::member(*m, "repository");
  if (repo == nullptr || !repo->is_string() || repo->get<std::string>().empty())
    return wrong("spec.mirror.repository", "a repository \"host[:port]/path\"",
                 repo == nullptr ? json() : *repo);
  out.repository = repo->get<std::string>();
  if (const json* ref = decode::member(*m, "credentialsSecretRef"); ref && !ref->is_null()) {
    const json* name = decode::member(*ref, "name");
    if (name == nullptr || !name->is_string() || name->get<std::string>().empty())
      return wrong("spec.mirror.credentialsSecretRef.name", "a Secret name",
                   name == nullptr ? json() : *name);
    out.credentialsSecret = name->get<std::string>();
  }
  if (const json* interval = decode::member(*m, "interval"); interval && !interval->is_null()) {
    std::optional<int64_t> s =
        interval->is_string() ? parseStageDuration(interval->get<std::string>()) : std::nullopt;
    if (!s || *s < kMinMirrorIntervalSeconds)
      return wrong("spec.mirror.interval", "a duration of at least 10s (\"1h\", \"30m\")",
                   *interval);
    out.intervalSeconds = *s;
  }
  out.requiredForPromotion = decode::boolean(*m, "requiredForPromotion", false);
  return std::optional<MirrorSpec>(out);
}

MirrorStatus decodeMirrorStatus(const json& m) {
  MirrorStatus out;
  out.repository = decode::string(m, "repository");
  out.revision = decode::integer(m, "revision", 0);
  out.closureHash = decode::string(m, "closureHash");
  out.result = decode::string(m, "result");
  out.checkedAt = decode::string(m, "checkedAt");
  out.nextCheckAt = decode::string(m, "nextCheckAt");
  out.artifacts = decode::integer(m, "artifacts", 0);
  out.missing = decode::integer(m, "missing", 0);
  out.manifestPresent = decode::boolean(m, "manifestPresent", false);
  for (const json& a : decode::array(m, "missingArtifacts")) {
    out.missingArtifacts.push_back(
        {decode::string(a, "file"), decode::string(a, "purl"), decode::string(a, "digest")});
  }
  out.error = decode::string(m, "error");
  return out;
}

json encodeMirrorStatus(const MirrorStatus& s) {
  json out = {{"repository", s.repository},
              {"revision", s.revision},
              {"closureHash", s.closureHash},
              {"result", s.result},
              {"checkedAt", s.checkedAt},
              {"nextCheckAt", s.nextCheckAt},
              {"artifacts", s.artifacts},
              {"missing", s.missing},
              {"manifestPresent", s.manifestPresent}};
  if (!s.missingArtifacts.empty()) {
    json list = json::array();
    for (const MissingArtifact& a : s.missingArtifacts) {
      json e = {{"file", a.file}, {"digest", a.digest}};
      if (!a.purl.empty()) e["purl"] = a.purl;
      list.push_back(std::move(e));
    }
    out["missingArtifacts"] = std::move(list);
  }
  if (!s.error.empty()) out["error"] = s.error;
  return out;
}

std::optional<std::string> mirrorBlocksPromotion(const json& runtimeEnv) {
  auto spec = decodeMirrorSpec(runtimeEnv);
  const std::string name = "RuntimeEnv \"" + decodeMeta(runtimeEnv).name + "\"";
  if (!spec.isOk()) return name + " requires its mirror for promotion: " + spec.status().message();
  if (!*spec || !(*spec)->requiredForPromotion) return std::nullopt;
  const json& status = decode::object(runtimeEnv, "status");
  auto mirrored = kube::findCondition(decode::array(status, "conditions"), kConditionMirrored);
  const int64_t generation =
      decode::integer(decode::object(runtimeEnv, "metadata"), "generation", 0);
  const MirrorStatus m = decodeMirrorStatus(decode::object(status, "mirror"));
  const std::string current = decode::string(status, "closureHash");
  if (!mirrored || decode::integer(*mirrored, "observedGeneration", 0) != generation ||
      m.closureHash != current || m.closureHash.empty())
    return name + " requires its mirror for promotion and the mirror of closure " + current +
           " is not checked yet";
  if (decode::string(*mirrored, "status") != kStatusTrue)
    return name + " requires its mirror for promotion: " + decode::string(*mirrored, "message");
  return std::nullopt;
}

}  // namespace lockstep::api::v1alpha1
