#include "operator/kube/client.h"

#include <condition_variable>
#include <random>

#include "operator/kube/api_error.h"
#include "operator/kube/backoff.h"

namespace lockstep::kube {
namespace {

StatusOr<Object> parseBody(const Response& resp) {
  nlohmann::json j = nlohmann::json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return internalError("response is not JSON (HTTP " + std::to_string(resp.status) + ")");
  }
  return j;
}

std::string nsOf(const Resource& r, const Object& obj, const std::string& ns) {
  if (!r.namespaced) return "";
  return ns.empty() ? namespaceOf(obj) : ns;
}

}  // namespace

std::string_view watchEventTypeName(WatchEvent::Type t) {
  switch (t) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

StatusOr<std::optional<WatchEvent>> Watcher::next() {
  while (true) {
    auto line = stream_->readLine();
    if (!line.isOk()) return line.status();
    if (!line->has_value()) return std::optional<WatchEvent>();
    const std::string& text = **line;
    if (text.empty() || text == "\r") continue;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) {
      return internalError("malformed watch event: " + text.substr(0, 200));
    }
    std::string type = j["type"];
    WatchEvent ev;
    if (type == "ADDED") {
      ev.type = WatchEvent::Type::kAdded;
    } else if (type == "MODIFIED") {
      ev.type = WatchEvent::Type::kModified;
    } else if (type == "DELETED") {
      ev.type = WatchEvent::Type::kDeleted;
    } else if (type == "BOOKMARK") {
      ev.type = WatchEvent::Type::kBookmark;
    } else if (type == "ERROR") {
      Status st = statusFromStatusObject(j.value("object", nlohmann::json::object()));
      if (st.isOk()) st = internalError("watch ERROR event without a status");
      return st;
    } else {
      return internalError("unknown watch event type " + type);
    }
    ev.object = j.value("object", nlohmann::json::object());
    return std::optional<WatchEvent>(std::move(ev));
  }
}

Client::Client(std::shared_ptr<Transport> transport, ClientOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {}

StatusOr<Object> Client::call(const Request& req) {
  auto resp = transport_->send(req);
  if (!resp.isOk()) return resp.status().withContext(req.describe());
  Status st = statusFromResponse(resp->status, resp->body);
  if (!st.isOk()) return st;
  return parseBody(*resp);
}

StatusOr<Object> Client::get(const Resource& r, const std::string& ns, const std::string& name) {
  return call(getRequest(r, ns, name));
}

StatusOr<ObjectList> Client::listPage(const Resource& r, const std::string& ns,
                                      const ListOptions& options, std::string* continueToken) {
  auto body = call(listRequest(r, ns, options));
  if (!body.isOk()) return body.status();
  ObjectList out;
  const auto& j = *body;
  if (j.contains("metadata") && j["metadata"].is_object()) {
    out.resourceVersion = j["metadata"].value("resourceVersion", "");
    if (continueToken) *continueToken = j["metadata"].value("continue", "");
  } else if (continueToken) {
    continueToken->clear();
  }
  if (j.contains("items") && j["items"].is_array()) {
    out.items.reserve(j["items"].size());
    // List items carry no apiVersion/kind; restore them so cached objects are self-describing.
    for (const auto& item : j["items"]) {
      Object o = item;
      if (!o.contains("apiVersion")) o["apiVersion"] = r.apiVersion();
      if (!o.contains("kind")) o["kind"] = r.kind;
      out.items.push_back(std::move(o));
    }
  }
  return out;
}

StatusOr<ObjectList> Client::list(const Resource& r, const std::string& ns, ListOptions options) {
  if (options.limit == 0) options.limit = options_.pageSize;
  ObjectList all;
  std::string token;
  bool first = true;
  while (first || !token.empty()) {
    ListOptions page = options;
    page.continueToken = token;
    auto result = listPage(r, ns, page, &token);
    if (!result.isOk()) {
      if (!first && result.status().code() == Code::kGone) {
        // The continue token expired mid-list: fall back to one full list.
        ListOptions full = options;
        full.limit = 0;
        full.continueToken.clear();
        return listPage(r, ns, full, nullptr);
      }
      return result.status();
    }
    first = false;
    all.resourceVersion = result->resourceVersion;
    for (auto& item : result->items) all.items.push_back(std::move(item));
  }
  return all;
}

StatusOr<Object> Client::create(const Resource& r, const Object& obj, const std::string& ns,
                                bool dryRun) {
  return call(createRequest(r, nsOf(r, obj, ns), obj, {options_.fieldManager, dryRun}));
}

StatusOr<Object> Client::update(const Resource& r, const Object& obj) {
  return call(updateRequest(r, nsOf(r, obj, ""), name(obj), obj, "", {options_.fieldManager}));
}

StatusOr<Object> Client::updateStatus(const Resource& r, const Object& obj) {
  return call(
      updateRequest(r, nsOf(r, obj, ""), name(obj), obj, "status", {options_.fieldManager}));
}

Status Client::remove(const Resource& r, const std::string& ns, const std::string& name,
                      const DeleteOptions& options) {
  auto result = call(deleteRequest(r, ns, name, options));
  return result.status();
}

StatusOr<Object> Client::mergePatch(const Resource& r, const std::string& ns,
                                    const std::string& name, const nlohmann::json& patch,
                                    const std::string& subresource) {
  return call(mergePatchRequest(r, ns, name, patch, subresource, {options_.fieldManager}));
}

StatusOr<Object> Client::patchStatus(const Resource& r, const std::string& ns,
                                     const std::string& name, const nlohmann::json& status) {
  return mergePatch(r, ns, name, nlohmann::json{{"status", status}}, "status");
}

ApplyOptions Client::applyOptions(const PatchParams& params) const {
  ApplyOptions o;
  o.fieldManager = params.fieldManager.empty() ? options_.fieldManager : params.fieldManager;
  o.force = params.force;
  o.dryRun = params.dryRun;
  return o;
}

StatusOr<Object> Client::apply(const Resource& r, const Object& obj, const PatchParams& params) {
  return call(applyRequest(r, nsOf(r, obj, ""), name(obj), obj, applyOptions(params)));
}

StatusOr<Object> Client::applyStatus(const Resource& r, const Object& obj,
                                     const PatchParams& params) {
  return call(applyRequest(r, nsOf(r, obj, ""), name(obj), obj, applyOptions(params), "status"));
}

StatusOr<std::unique_ptr<Watcher>> Client::watch(const Resource& r, const std::string& ns,
                                                 const WatchOptions& options) {
  auto stream = transport_->openStream(watchRequest(r, ns, options));
  if (!stream.isOk()) return stream.status();
  return std::make_unique<Watcher>(std::move(stream).value());
}

Status retryOnConflict(const std::function<Status()>& fn, const RetryOptions& options) {
  Clock& clock = options.clock ? *options.clock : SystemClock::instance();
  thread_local std::mt19937_64 rng{std::random_device{}()};
  Status last;
  for (int i = 0; i < options.attempts; ++i) {
    last = fn();
    if (last.code() != Code::kConflict) return last;
    if (i + 1 == options.attempts) break;
    std::mutex mu;
    std::condition_variable cv;
    std::unique_lock<std::mutex> lock(mu);
    auto deadline = clock.now() + jittered(options.delay, options.jitter, rng);
    while (clock.now() < deadline) clock.waitUntil(lock, cv, deadline);
  }
  return last;
}

}  // namespace lockstep::kube
