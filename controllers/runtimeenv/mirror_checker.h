// MirrorChecker: runs the mirror checks runtimeenv_mirror.h asks for, off the reconcile
// workers. A reconcile reads the latest result of its RuntimeEnv and, when a check is
// due, hands the request over and returns at once; one dispatcher thread takes the
// requests in turn and answers each with a HEAD per blob (and a GET of the artifact
// manifest's tag), on at most `concurrency` threads, each with its own registry client;
// no blob is downloaded. When a check ends, the RuntimeEnv is woken (the controller's
// queue) so its next reconcile records the result. A slow or absent registry keeps only
// these threads busy (each request bounded by the client's timeout).
//
// Credentials: spec.mirror.credentialsSecretRef names a kubernetes.io/dockerconfigjson
// Secret in the RuntimeEnv's namespace. It is read with `get` when a check starts
// (never listed, watched, cached, logged or put in status) and used only when the
// Secret lends itself to that repository (annotation lockstep.dev/mirror-repositories,
// docs/security.md "The mirror's credentials").
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "controllers/runtimeenv/runtimeenv_mirror.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/registry/credentials.h"
#include "operator/registry/distribution.h"

namespace lockstep::controllers {

// What a check reaches: the credentials Secret and the registry.
class MirrorRegistry {
 public:
  virtual ~MirrorRegistry() = default;
  // The credentials `secret` lends to `repository` ("" secret: nullopt, anonymous).
  virtual StatusOr<std::optional<registry::Credentials>> credentials(
      const std::string& ns, const std::string& secret,
      const mirror::RepositoryRef& repository) = 0;
  // A client for one thread.
  virtual StatusOr<std::unique_ptr<registry::RegistryClient>> open(
      const std::string& host, const std::optional<registry::Credentials>& credentials) = 0;
};

// The Secret through the Kubernetes API, the registry over https (TLS 1.2+, verified
// against `caPem`, the operator's --registry-ca-file, else the system roots).
std::shared_ptr<MirrorRegistry> makeMirrorRegistry(std::shared_ptr<kube::Client> client,
                                                   std::string caPem);

class MirrorChecker {
 public:
  using Wake = std::function<void(const std::string& ns, const std::string& name)>;
  using Finished = std::function<void(const MirrorCheckResult&)>;

  MirrorChecker(std::shared_ptr<MirrorRegistry> registry, kube::Clock& clock,
                size_t concurrency = 8);
  ~MirrorChecker();
  MirrorChecker(const MirrorChecker&) = delete;
  MirrorChecker& operator=(const MirrorChecker&) = delete;

  // Set before the first start().
  void setWake(Wake wake) { wake_ = std::move(wake); }
  void setFinished(Finished finished) { finished_ = std::move(finished); }

  // The last finished check of a RuntimeEnv.
  std::optional<MirrorCheckResult> latest(const std::string& ns, const std::string& name) const;
  // Queues `request` unless the same check (closure and repository) is running or queued
  // for that RuntimeEnv; a queued check of another closure is replaced.
  void start(MirrorCheckRequest request);
  // The RuntimeEnv is gone: its result is dropped (a running check still ends).
  void forget(const std::string& ns, const std::string& name);

  // The check itself, on the calling thread (the dispatcher's; tests).
  MirrorCheckResult run(const MirrorCheckRequest& request);

 private:
  void dispatch();

  std::shared_ptr<MirrorRegistry> registry_;
  kube::Clock& clock_;
  size_t concurrency_;
  Wake wake_;
  Finished finished_;
  mutable std::mutex mu_;
  std::condition_variable work_;
  std::deque<MirrorCheckRequest> queue_;
  std::optional<MirrorCheckRequest> running_;
  std::map<std::string, MirrorCheckResult> latest_;  // by "ns/name"
  bool stopping_ = false;
  std::thread dispatcher_;
};

}  // namespace lockstep::controllers
