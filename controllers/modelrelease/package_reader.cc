#include "controllers/modelrelease/package_reader.h"

#include <spdlog/spdlog.h>

#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/release_status.h"
#include "controllers/modelrelease/tags/stage_tagger.h"
#include "operator/registry/connect.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;

// The largest ModelPack config read (the spec's example is 301 bytes).
constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// The registry did not answer: no address, no connection, no TLS, a timeout,
// 429 or 5xx (registry::codeForHttpStatus), as opposed to an answer about the
// package (404, 401, 403, a bad manifest).
bool registryDown(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded;
}

class RegistryPackageReader final : public PackageReader {
 public:
  explicit RegistryPackageReader(std::string caPem) : caPem_(std::move(caPem)) {}

  PackageObserved read(const registry::PackageRef& ref,
                       const std::optional<registry::Credentials>& creds) override {
    PackageObserved out;
    out.digest = ref.digest;
    registry::ConnectOptions options;
    options.caPem = caPem_;
    options.timeout = std::chrono::seconds(10);
    auto client = registry::connectRegistry(ref.apiHost(), creds, options);
    if (!client.isOk()) {
      out.unreadable = client.status().message();
      out.registryDown = registryDown(client.status());
      return out;
    }
    auto manifest = (*client)->getManifest(ref.repository, ref.digest);
    if (!manifest.isOk()) {
      out.unreadable = manifest.status().message();
      out.registryDown = registryDown(manifest.status());
      return out;
    }
    auto info = v1::classifyPackageManifest(manifest->mediaType, manifest->bytes);
    if (!info.isOk()) {
      out.refused = "manifest " + ref.digest + ": " + info.status().message();
      return out;
    }
    info->digest = ref.digest;
    if (info->kind == v1::kPackageKindModelPack) {
      auto blob = (*client)->getBlob(ref.repository, info->configDigest, kMaxConfigBytes);
      if (!blob.isOk()) {
        out.unreadable = "ModelPack config " + info->configDigest + ": " + blob.status().message();
        return out;
      }
      auto config = v1::parseModelPackConfig(*blob);
      Status layers = config.isOk() ? v1::checkModelPackLayers(*info, *config) : config.status();
      if (!layers.isOk()) {
        out.refused = "ModelPack config " + info->configDigest + ": " + layers.message();
        return out;
      }
      info->model = std::move(*config);
    }
    out.info = std::move(*info);
    return out;
  }

 private:
  std::string caPem_;
};

}  // namespace

std::shared_ptr<PackageReader> makeRegistryPackageReader(std::string caPem) {
  return std::make_shared<RegistryPackageReader>(std::move(caPem));
}

PackageDescriber::PackageDescriber(std::shared_ptr<kube::Client> client,
                                   std::shared_ptr<PackageReader> reader)
    : client_(std::move(client)), reader_(std::move(reader)) {}

std::optional<PackageObserved> PackageDescriber::describe(const nlohmann::json& release,
                                                          int64_t nowUnix) {
  const v1::ModelRelease r = v1::decodeModelRelease(release);
  if (r.status.phase && isTerminalPhase(std::string(v1::phaseName(*r.status.phase))))
    return std::nullopt;
  auto ref = registry::parsePackageRef(r.spec.package);
  if (!ref.isOk()) return std::nullopt;
  if (r.status.package && r.status.package->digest == ref->digest) return std::nullopt;
  const std::string key = r.meta.ns + "/" + ref->name() + "@" + ref->digest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && (it->second.retryAt == 0 || nowUnix < it->second.retryAt))
      return it->second.answer;
  }
  PackageObserved answer;
  answer.digest = ref->digest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = down_.find(ref->registry);
    if (it != down_.end() && nowUnix < it->second.until) {
      answer.registryDown = true;
      answer.unreadable = "registry " + ref->registry + " not asked: it did not answer " +
                          std::to_string(kRegistryDownSeconds - (it->second.until - nowUnix)) +
                          "s ago (" + it->second.why + "); asked again from " +
                          std::to_string(it->second.until - nowUnix) + "s on";
      cache_[key] = {answer, it->second.until};
      return answer;
    }
  }
  std::string secret;
  if (auto tags = v1::registryTagsOf(release); tags.isOk()) secret = tags->secretName;
  auto creds = releaseRegistryCredentials(*client_, r.meta.ns, secret, ref->registry);
  if (!creds.isOk()) {
    answer.unreadable = creds.status().message();
  } else {
    answer = reader_->read(*ref, *creds);
  }
  if (!answer.unreadable.empty()) {
    spdlog::info("modelrelease {}/{}: package {} not read: {}", r.meta.ns, r.meta.name, ref->name(),
                 answer.unreadable);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (answer.registryDown) {
    down_[ref->registry] = {nowUnix + kRegistryDownSeconds, answer.unreadable};
  } else {
    down_.erase(ref->registry);  // it answered (or was not asked: no credentials)
  }
  cache_[key] = {answer, answer.unreadable.empty() ? 0 : nowUnix + kRetrySeconds};
  return answer;
}

}  // namespace lockstep::controllers
