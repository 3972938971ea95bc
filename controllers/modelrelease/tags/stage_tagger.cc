#include "controllers/modelrelease/tags/stage_tagger.h"

#include <spdlog/spdlog.h>

#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "controllers/modelrelease/tags/stage_tag_plan.h"
#include "operator/kube/object.h"
#include "operator/kube/resource.h"
#include "operator/registry/connect.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

constexpr const char* kDockerConfigJsonType = "kubernetes.io/dockerconfigjson";
constexpr const char* kDockerConfigJsonKey = ".dockerconfigjson";

class ConnectingTagger final : public RegistryTagger {
 public:
  explicit ConnectingTagger(std::string caPem) : caPem_(std::move(caPem)) {}
  StatusOr<registry::TagOutcome> tag(const registry::PackageRef& package, const std::string& tag,
                                     const std::optional<registry::Credentials>& creds) override {
    registry::ConnectOptions options;
    options.caPem = caPem_;
    auto client = registry::connectRegistry(package.apiHost(), creds, options);
    if (!client.isOk()) return client.status();
    return (*client)->tag(package, tag);
  }

 private:
  std::string caPem_;
};

}  // namespace

std::shared_ptr<RegistryTagger> makeRegistryTagger(std::string caPem) {
  return std::make_shared<ConnectingTagger>(std::move(caPem));
}

StageTagger::StageTagger(std::shared_ptr<kube::Client> client, kube::EventSink& events,
                         std::shared_ptr<RegistryTagger> registry)
    : client_(std::move(client)), events_(events), registry_(std::move(registry)) {}

StatusOr<std::optional<registry::Credentials>> StageTagger::credentials(const std::string& ns,
                                                                        const std::string& secret,
                                                                        const std::string& host) {
  return releaseRegistryCredentials(*client_, ns, secret, host);
}

StatusOr<std::optional<registry::Credentials>> releaseRegistryCredentials(kube::Client& client,
                                                                          const std::string& ns,
                                                                          const std::string& secret,
                                                                          const std::string& host) {
  if (secret.empty()) return std::optional<registry::Credentials>();
  const std::string where = "Secret " + ns + "/" + secret + " (spec.registryTags.secretRef)";
  auto s = client.get(kube::resources::kSecrets, ns, secret);
  if (!s.isOk() && s.status().code() == Code::kForbidden) {
    return s.status().withContext(
        "reading " + where +
        " (the operator reads registry Secrets only when the chart sets registryTags.enabled)");
  }
  if (!s.isOk()) return s.status().withContext("reading " + where);
  std::string type = s->value("type", "");
  if (type != kDockerConfigJsonType) {
    return invalidArgument(where + " has type \"" + type + "\", not " + kDockerConfigJsonType);
  }
  std::string encoded = s->value("/data/.dockerconfigjson"_json_pointer, std::string());
  auto decoded = registry::base64Decode(encoded);
  if (encoded.empty() || !decoded) {
    return invalidArgument(where + " has no base64 " + kDockerConfigJsonKey + " key");
  }
  return registry::credentialsForHost(*decoded, host, where);
}

int64_t StageTagger::run(const json& release, const json& plannedStatus,
                         const std::string& promotedRelease, const std::string& promotedPackage,
                         const std::string& now, int64_t nowUnix) {
  const std::string key = kube::namespaceOf(release) + "/" + kube::name(release);
  auto settings = api::v1alpha1::registryTagsOf(release);
  if (!settings.isOk()) {
    spdlog::warn("modelrelease {}: registry tags off: {}", key, settings.status().message());
    return 0;
  }
  if (!settings->enabled) return 0;
  const api::v1alpha1::ObjectMeta meta = api::v1alpha1::decodeMeta(release);
  const std::string& uid = meta.uid;
  json status = plannedStatus;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Written last, until the status handed in shows it (then forgotten).
    if (auto it = written_.find(uid); it != written_.end()) {
      if (status.contains("registryTags") && status["registryTags"] == it->second) {
        written_.erase(it);
      } else {
        status["registryTags"] = it->second;
      }
    }
  }
  StageTagsObserved o{release, status, promotedRelease, promotedPackage, now, nowUnix};
  StageTagsPlan plan = planStageTags(o);
  if (plan.due.empty()) return plan.retryAfterSeconds;

  const std::string ns = kube::namespaceOf(release);
  std::vector<StageTagResult> results;
  for (const StageTagTarget& t : plan.due) {
    StageTagResult r;
    r.target = t;
    auto ref = registry::parsePackageRef(t.package);
    if (!ref.isOk()) {
      r.error = ref.status().message();
      results.push_back(r);
      continue;
    }
    r.reference = ref->name() + ":" + t.tag;
    r.digest = ref->digest;
    auto creds = credentials(ns, settings->secretName, ref->registry);
    if (!creds.isOk()) {
      r.error = creds.status().message();
      results.push_back(r);
      continue;
    }
    auto out = registry_->tag(*ref, t.tag, *creds);
    if (out.isOk()) {
      r.previousDigest = out->previousDigest;
      r.moved = out->moved;
    } else {
      r.error = out.status().message();
    }
    results.push_back(r);
  }

  const int64_t generation = meta.generation;
  StageTagsStatus st = foldStageTagResults(status, plan.wanted, results, generation, now);
  json apply = {
      {"apiVersion", api::v1alpha1::kModelReleases.apiVersion()},
      {"kind", api::v1alpha1::kModelReleases.kind},
      {"metadata", {{"name", kube::name(release)}, {"namespace", ns}}},
      {"status", {{"registryTags", st.entries}, {"conditions", json::array({st.condition})}}}};
  auto applied = client_->applyStatus(api::v1alpha1::kModelReleases, apply,
                                      kube::PatchParams::apply(kStageTagsFieldManager));
  if (applied.isOk()) {
    std::lock_guard<std::mutex> lock(mu_);
    written_[uid] = st.entries;
  } else {
    spdlog::warn("modelrelease {}: recording registry tags: {}", key, applied.status().toString());
  }

  int64_t retry = plan.retryAfterSeconds;
  for (const StageTagResult& r : results) {
    if (r.error.empty()) {
      std::string msg = r.reference + " -> " + r.digest + " (" + r.target.why + ")";
      if (!r.moved) msg += "; it already pointed there";
      if (!r.previousDigest.empty() && r.moved) msg += "; it pointed at " + r.previousDigest;
      spdlog::info("modelrelease {}: registry tag {}", key, msg);
      if (r.moved) (void)events_.normal(release, "RegistryTagged", msg);
      continue;
    }
    spdlog::warn("modelrelease {}: registry tag {}: {}", key, r.target.tag, r.error);
    (void)events_.warning(release, "RegistryTagFailed",
                          "tag " + (r.reference.empty() ? r.target.tag : r.reference) + ": " +
                              r.error + " (retrying; the release is not held back)");
    int attempts = 1;
    for (const json& e : st.entries)
      if (e.value("tag", "") == r.target.tag) attempts = e.value("attempts", 1);
    int64_t wait = stageTagBackoffSeconds(attempts);
    if (retry == 0 || wait < retry) retry = wait;
  }
  if (!applied.isOk() && (retry == 0 || retry > 10)) retry = 10;
  return retry;
}

}  // namespace lockstep::controllers
