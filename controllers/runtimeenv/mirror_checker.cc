#include "controllers/runtimeenv/mirror_checker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include <spdlog/spdlog.h>

#include "api/v1alpha1/runtime_mirror.h"
#include "operator/kube/object.h"
#include "operator/kube/resource.h"
#include "operator/registry/connect.h"

namespace lockstep::controllers {
namespace {

constexpr const char* kDockerConfigJsonType = "kubernetes.io/dockerconfigjson";
namespace v1 = api::v1alpha1;

std::string keyOf(const std::string& ns, const std::string& name) { return ns + "/" + name; }

bool sameCheck(const MirrorCheckRequest& a, const MirrorCheckRequest& b) {
  return a.ns == b.ns && a.name == b.name && a.closureHash == b.closureHash &&
         a.repository == b.repository && a.credentialsSecret == b.credentialsSecret;
}

class KubeMirrorRegistry final : public MirrorRegistry {
 public:
  KubeMirrorRegistry(std::shared_ptr<kube::Client> client, std::string caPem)
      : client_(std::move(client)), caPem_(std::move(caPem)) {}

  StatusOr<std::optional<registry::Credentials>> credentials(
      const std::string& ns, const std::string& secret,
      const mirror::RepositoryRef& repository) override {
    if (secret.empty()) return std::optional<registry::Credentials>();
    const std::string where = "Secret " + ns + "/" + secret + " (spec.mirror.credentialsSecretRef)";
    auto s = client_->get(kube::resources::kSecrets, ns, secret);
    if (!s.isOk() && s.status().code() == Code::kForbidden) {
      return s.status().withContext("reading " + where +
                                    " (the operator reads Secrets in watched namespaces only "
                                    "when the chart sets mirror.credentials)");
    }
    if (!s.isOk()) return s.status().withContext("reading " + where);
    const std::string repo = repository.registry + "/" + repository.repository;
    auto annotations = kube::annotations(*s);
    auto lends = annotations.find(v1::kMirrorRepositoriesAnnotation);
    if (lends == annotations.end() || !secretLendsTo(lends->second, repository)) {
      return Status(Code::kForbidden,
                    where + " does not lend its credentials to " + repo + ": its annotation " +
                        v1::kMirrorRepositoriesAnnotation +
                        " must name that repository or a "
                        "parent of it (docs/security.md, \"The mirror's credentials\")");
    }
    const std::string type = s->value("type", "");
    if (type != kDockerConfigJsonType) {
      return invalidArgument(where + " has type \"" + type + "\", not " + kDockerConfigJsonType);
    }
    std::string encoded = s->value("/data/.dockerconfigjson"_json_pointer, std::string());
    auto decoded = registry::base64Decode(encoded);
    if (encoded.empty() || !decoded) {
      return invalidArgument(where + " has no base64 .dockerconfigjson key");
    }
    auto creds = registry::credentialsForHost(*decoded, repository.registry, where);
    if (creds.isOk() && !*creds) {
      return invalidArgument(where + " has no credentials for " + repository.registry);
    }
    return creds;
  }

  StatusOr<std::unique_ptr<registry::RegistryClient>> open(
      const std::string& host, const std::optional<registry::Credentials>& credentials) override {
    registry::ConnectOptions options;
    options.caPem = caPem_;
    options.timeout = std::chrono::seconds(15);
    return registry::connectRegistry(host, credentials, options);
  }

 private:
  std::shared_ptr<kube::Client> client_;
  std::string caPem_;
};

}  // namespace

std::shared_ptr<MirrorRegistry> makeMirrorRegistry(std::shared_ptr<kube::Client> client,
                                                   std::string caPem) {
  return std::make_shared<KubeMirrorRegistry>(std::move(client), std::move(caPem));
}

MirrorChecker::MirrorChecker(std::shared_ptr<MirrorRegistry> registry, kube::Clock& clock,
                             size_t concurrency)
    : registry_(std::move(registry)),
      clock_(clock),
      concurrency_(std::max<size_t>(1, concurrency)),
      dispatcher_([this] { dispatch(); }) {}

MirrorChecker::~MirrorChecker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  dispatcher_.join();
}

std::optional<MirrorCheckResult> MirrorChecker::latest(const std::string& ns,
                                                       const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_.find(keyOf(ns, name));
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

void MirrorChecker::start(MirrorCheckRequest request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ && sameCheck(*running_, request)) return;
    for (MirrorCheckRequest& queued : queue_) {
      if (queued.ns == request.ns && queued.name == request.name) {
        if (!sameCheck(queued, request)) queued = std::move(request);
        return;
      }
    }
    queue_.push_back(std::move(request));
  }
  work_.notify_one();
}

void MirrorChecker::forget(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  latest_.erase(keyOf(ns, name));
  queue_.erase(
      std::remove_if(queue_.begin(), queue_.end(),
                     [&](const MirrorCheckRequest& r) { return r.ns == ns && r.name == name; }),
      queue_.end());
}

void MirrorChecker::dispatch() {
  while (true) {
    MirrorCheckRequest request;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      request = std::move(queue_.front());
      queue_.pop_front();
      running_ = request;
    }
    MirrorCheckResult result = run(request);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.reset();
      latest_[keyOf(request.ns, request.name)] = result;
    }
    if (finished_) finished_(result);
    spdlog::info("runtimeenv {}/{}: mirror {}: {} of {} artifacts missing, manifest {}{}",
                 request.ns, request.name, request.repository, result.missing.size(),
                 result.artifacts, result.manifestPresent ? "present" : "missing",
                 result.error.empty() ? "" : " (" + result.error + ")");
    if (wake_) wake_(request.ns, request.name);
  }
}

MirrorCheckResult MirrorChecker::run(const MirrorCheckRequest& request) {
  MirrorCheckResult result;
  result.repository = request.repository;
  result.closureHash = request.closureHash;
  result.revision = request.revision;
  result.artifacts = static_cast<int64_t>(request.artifacts.size());
  auto finish = [&](MirrorCheckResult::Outcome outcome, const std::string& error) {
    result.outcome = outcome;
    result.error = error;
    result.missing.clear();
    result.manifestPresent = false;
    result.checkedAtUnix =
        std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch())
            .count();
    return result;
  };
  auto creds = registry_->credentials(request.ns, request.credentialsSecret, request.where);
  if (!creds.isOk())
    return finish(MirrorCheckResult::Outcome::kCredentials, creds.status().message());

  // The manifest first, on this thread: it also answers whether the registry is there.
  auto first = registry_->open(request.where.registry, *creds);
  if (!first.isOk())
    return finish(MirrorCheckResult::Outcome::kUnreachable, first.status().message());
  auto tagged =
      (*first)->resolveTag(request.where.repository, mirror::mirrorTag(request.closureHash));
  if (!tagged.isOk() && tagged.status().code() != Code::kNotFound)
    return finish(MirrorCheckResult::Outcome::kUnreachable, tagged.status().message());
  const bool manifestPresent = tagged.isOk();

  // A HEAD per blob on at most concurrency_ threads, each with its own client.
  const size_t n = request.artifacts.size();
  std::vector<char> present(n, 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex errorMu;
  std::string error;
  auto worker = [&](registry::RegistryClient* client) {
    std::unique_ptr<registry::RegistryClient> own;
    if (client == nullptr) {
      auto opened = registry_->open(request.where.registry, *creds);
      if (!opened.isOk()) {
        std::lock_guard<std::mutex> lock(errorMu);
        if (!failed.exchange(true)) error = opened.status().message();
        return;
      }
      own = std::move(*opened);
      client = own.get();
    }
    for (size_t i = next++; i < n && !failed; i = next++) {
      auto size = client->blobSize(request.where.repository, request.artifacts[i].digest);
      if (!size.isOk()) {
        std::lock_guard<std::mutex> lock(errorMu);
        if (!failed.exchange(true)) error = size.status().message();
        return;
      }
      present[i] = size->has_value() ? 1 : 0;
    }
  };
  const size_t threads = std::min(concurrency_, std::max<size_t>(n, 1));
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker, nullptr);
  worker(first->get());
  for (std::thread& t : pool) t.join();
  if (failed) return finish(MirrorCheckResult::Outcome::kUnreachable, error);

  finish(MirrorCheckResult::Outcome::kChecked, "");
  result.manifestPresent = manifestPresent;
  for (size_t i = 0; i < n; ++i) {
    if (present[i] != 0) continue;
    const mirror::Entry& e = request.artifacts[i];
    result.missing.push_back(
        {e.fileName.empty() ? e.name + " " + e.version : e.fileName, e.purl, e.digest});
  }
  return result;
}

}  // namespace lockstep::controllers
