// TokenSource: the Authorization header for each request. A static token is
// returned as is; a token file (in-cluster, or kubeconfig tokenFile) is re-read
// when its modification time changes or a minute has passed, so a rotated
// service-account token is picked up without a restart. The value is a secret:
// callers put it in a header and never log it.
// Thread-safety: safe for concurrent use.
#pragma once

#include <ctime>
#include <mutex>
#include <string>

#include "operator/kube/clock.h"
#include "operator/kube/kube_config.h"

namespace lockstep::kube {

class TokenSource {
 public:
  TokenSource(const KubeConfig& config, Clock& clock);
  // "Bearer <token>", "Basic <base64>", or "" when the config has no credentials.
  std::string authorizationHeader();

 private:
  std::string refreshLocked();

  Clock& clock_;
  std::string staticToken_;
  std::string tokenFile_;
  std::string basic_;
  std::mutex mu_;
  std::string cached_;
  struct timespec mtime_ {};
  Clock::TimePoint readAt_{};
  bool read_ = false;
};

}  // namespace lockstep::kube
