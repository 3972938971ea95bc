// FakeTransport: a scripted Transport with knobs, for unit tests of the
// client, reflector, informer, events and leader election without a socket.
//
// Replies are taken in order from a script (push); a handler (setHandler) may
// answer instead, e.g. to emulate a tiny API server. A reply is a Response, an
// injected transport error (Status), or a watch Stream: lines, then a clean
// end, an error, or hanging until cancelled. With nothing scripted, watches
// hang until cancelled and other calls fail Unavailable. Every request is
// recorded.
// Thread-safety: safe for concurrent use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/transport.h"

namespace lockstep::testing {

struct FakeStream {
  std::vector<std::string> lines;
  enum class End { kClose, kError, kHang } end = End::kHang;
  Status error = unavailable("connection reset by peer");
};

using FakeReply = std::variant<kube::Response, Status, FakeStream>;

class FakeTransport final : public kube::Transport {
 public:
  using Handler = std::function<std::optional<FakeReply>(const kube::Request&)>;

  void push(FakeReply reply);
  void setHandler(Handler h);
  std::vector<kube::Request> requests() const;
  size_t requestCount() const;
  // Waits (real time, bounded) until at least n requests arrived.
  bool waitForRequests(size_t n,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Unblocks every hanging stream (as if the server closed them).
  void closeStreams();

  StatusOr<kube::Response> send(const kube::Request& request) override;
  StatusOr<std::unique_ptr<kube::LineStream>> openStream(const kube::Request& request) override;

  // Reply builders.
  static kube::Response ok(const nlohmann::json& body);
  static kube::Response status(int code, const std::string& reason, const std::string& message);
  static kube::Response list(const std::vector<nlohmann::json>& items, const std::string& rv,
                             const std::string& continueToken = "");
  static std::string event(const std::string& type, const nlohmann::json& object);
  static std::string bookmark(const std::string& rv);
  static std::string errorEvent(int code, const std::string& reason, const std::string& message);

  struct StreamState;

 private:
  FakeReply next(const kube::Request& request);

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<FakeReply> script_;
  Handler handler_;
  std::vector<kube::Request> requests_;
  std::vector<std::shared_ptr<StreamState>> streams_;
};

// A test object: {"apiVersion":"v1","kind":"ConfigMap","metadata":{...}}.
nlohmann::json testObject(const std::string& ns, const std::string& name, const std::string& rv,
                          const std::string& kind = "ConfigMap");

}  // namespace lockstep::testing
