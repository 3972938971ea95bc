// WriteGuardTransport: a Transport that forwards to another one but asks a guard before
// every request that is not a GET (create, update, patch, apply, delete); a non-OK Status
// refuses the write without sending it. The Manager's controllers and event recorder write
// through a client on it whose guard refuses once this replica is not (or no longer)
// leading — checked per write, so a reconcile in flight when the lease is lost cannot write
// after it. Reads and watches pass unchanged.
// Thread-safety: as the wrapped transport; the guard is called from any thread.
#pragma once

#include <functional>
#include <memory>

#include "operator/kube/client.h"
#include "operator/kube/transport.h"

namespace lockstep::runtime {

using WriteGuard = std::function<Status()>;

class WriteGuardTransport final : public kube::Transport {
 public:
  // `base` keeps the wrapped transport alive.
  WriteGuardTransport(std::shared_ptr<kube::Client> base, WriteGuard guard)
      : base_(std::move(base)), guard_(std::move(guard)) {}

  StatusOr<kube::Response> send(const kube::Request& request) override {
    if (request.method != "GET") {
      if (Status allowed = guard_(); !allowed.isOk())
        return allowed.withContext(request.describe());
    }
    return base_->transport().send(request);
  }
  StatusOr<std::unique_ptr<kube::LineStream>> openStream(const kube::Request& request) override {
    return base_->transport().openStream(request);
  }

 private:
  std::shared_ptr<kube::Client> base_;
  WriteGuard guard_;
};

// A client on `base`'s transport and options whose writes `guard` must allow.
inline std::shared_ptr<kube::Client> withWriteGuard(const std::shared_ptr<kube::Client>& base,
                                                    WriteGuard guard) {
  return std::make_shared<kube::Client>(
      std::make_shared<WriteGuardTransport>(base, std::move(guard)), base->options());
}

}  // namespace lockstep::runtime
