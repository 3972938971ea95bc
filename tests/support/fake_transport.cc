#include "tests/support/fake_transport.h"

#include "operator/kube/api_error.h"

namespace lockstep::testing {

struct FakeTransport::StreamState {
  std::mutex mu;
  std::condition_variable cv;
  bool cancelled = false;
  bool closed = false;
};

namespace {

class FakeLineStream final : public kube::LineStream {
 public:
  FakeLineStream(FakeStream script, std::shared_ptr<FakeTransport::StreamState> state)
      : script_(std::move(script)), state_(std::move(state)) {}

  StatusOr<std::optional<std::string>> readLine() override {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (state_->cancelled) return Status(Code::kCancelled, "cancelled");
    if (next_ < script_.lines.size()) return std::optional<std::string>(script_.lines[next_++]);
    switch (script_.end) {
      case FakeStream::End::kClose:
        return std::optional<std::string>();
      case FakeStream::End::kError:
        return script_.error;
      case FakeStream::End::kHang:
        state_->cv.wait(lock, [&] { return state_->cancelled || state_->closed; });
        if (state_->cancelled) return Status(Code::kCancelled, "cancelled");
        return std::optional<std::string>();
    }
    return std::optional<std::string>();
  }

  void cancel() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->cancelled = true;
    state_->cv.notify_all();
  }

 private:
  FakeStream script_;
  std::shared_ptr<FakeTransport::StreamState> state_;
  size_t next_ = 0;
};

}  // namespace

void FakeTransport::push(FakeReply reply) {
  std::lock_guard<std::mutex> lock(mu_);
  script_.push_back(std::move(reply));
}

void FakeTransport::setHandler(Handler h) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(h);
}

std::vector<kube::Request> FakeTransport::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FakeTransport::requestCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

bool FakeTransport::waitForRequests(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

void FakeTransport::closeStreams() {
  std::vector<std::shared_ptr<StreamState>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams.swap(streams_);
  }
  for (auto& s : streams) {
    std::lock_guard<std::mutex> lock(s->mu);
    s->closed = true;
    s->cv.notify_all();
  }
}

FakeReply FakeTransport::next(const kube::Request& request) {
  Handler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    cv_.notify_all();
    if (!script_.empty()) {
      FakeReply r = std::move(script_.front());
      script_.pop_front();
      return r;
    }
    handler = handler_;
  }
  if (handler) {
    if (auto r = handler(request)) return *r;
  }
  if (request.watch) return FakeStream{};
  return unavailable("fake transport: nothing scripted for " + request.describe());
}

StatusOr<kube::Response> FakeTransport::send(const kube::Request& request) {
  FakeReply r = next(request);
  if (auto* resp = std::get_if<kube::Response>(&r)) return *resp;
  if (auto* st = std::get_if<Status>(&r)) return *st;
  return internalError("fake transport: a stream scripted for " + request.describe());
}

StatusOr<std::unique_ptr<kube::LineStream>> FakeTransport::openStream(
    const kube::Request& request) {
  FakeReply r = next(request);
  if (auto* st = std::get_if<Status>(&r)) return *st;
  if (auto* resp = std::get_if<kube::Response>(&r)) {
    Status st = kube::statusFromResponse(resp->status, resp->body);
    if (!st.isOk()) return st;
    // A 200 response body as a stream of lines.
    FakeStream s;
    s.end = FakeStream::End::kClose;
    s.lines.push_back(resp->body);
    r = s;
  }
  auto state = std::make_shared<StreamState>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(state);
  }
  return std::unique_ptr<kube::LineStream>(
      std::make_unique<FakeLineStream>(std::get<FakeStream>(std::move(r)), state));
}

kube::Response FakeTransport::ok(const nlohmann::json& body) {
  return kube::Response{200, body.dump(), "application/json"};
}

kube::Response FakeTransport::status(int code, const std::string& reason,
                                     const std::string& message) {
  nlohmann::json st = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                       {"reason", reason}, {"message", message}, {"code", code}};
  return kube::Response{code, st.dump(), "application/json"};
}

kube::Response FakeTransport::list(const std::vector<nlohmann::json>& items, const std::string& rv,
                                   const std::string& continueToken) {
  nlohmann::json body = {{"kind", "List"},
                         {"apiVersion", "v1"},
                         {"metadata", {{"resourceVersion", rv}}},
                         {"items", items}};
  if (!continueToken.empty()) body["metadata"]["continue"] = continueToken;
  return ok(body);
}

std::string FakeTransport::event(const std::string& type, const nlohmann::json& object) {
  return nlohmann::json{{"type", type}, {"object", object}}.dump();
}

std::string FakeTransport::bookmark(const std::string& rv) {
  return event(
      "BOOKMARK",
      {{"kind", "ConfigMap"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", rv}}}});
}

std::string FakeTransport::errorEvent(int code, const std::string& reason,
                                      const std::string& message) {
  return event("ERROR", {{"kind", "Status"},
                         {"apiVersion", "v1"},
                         {"status", "Failure"},
                         {"reason", reason},
                         {"message", message},
                         {"code", code}});
}

nlohmann::json testObject(const std::string& ns, const std::string& name, const std::string& rv,
                          const std::string& kind) {
  return {{"apiVersion", "v1"},
          {"kind", kind},
          {"metadata",
           {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}, {"uid", "uid-" + name}}}};
}

}  // namespace lockstep::testing
