// Client: typed verbs over a Transport — get, list (all pages), create,
// update, delete, JSON merge patch, server-side apply, the status subresource
// and watch — on JSON objects. It builds requests (request.h), sends them,
// and maps failures with statusFromResponse (api_error.h).
// Thread-safety: safe for concurrent use; a Watcher is read by one thread
// (cancel() from any).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/kube/clock.h"
#include "operator/kube/object.h"
#include "operator/kube/request.h"
#include "operator/kube/resource.h"
#include "operator/kube/transport.h"

namespace lockstep::kube {

struct ObjectList {
  std::vector<Object> items;
  std::string resourceVersion;  // of the list: a watch resumes from here
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  Object object;
};
std::string_view watchEventTypeName(WatchEvent::Type t);

// A decoded watch stream.
class Watcher {
 public:
  explicit Watcher(std::unique_ptr<LineStream> stream) : stream_(std::move(stream)) {}
  // The next event. nullopt: the server closed the watch (e.g. timeoutSeconds).
  // Errors: an ERROR event mapped to a Status (410 → Gone), a malformed event
  // (Internal), or the connection failing (Unavailable / Cancelled).
  StatusOr<std::optional<WatchEvent>> next();
  void cancel() { stream_->cancel(); }

 private:
  std::unique_ptr<LineStream> stream_;
};

struct ClientOptions {
  std::string fieldManager = "lockstep";  // default for create/update/patch/apply
  int64_t pageSize = 500;                 // list page size when ListOptions.limit is 0
};

// Per-call parameters of a server-side apply, as kube-rs's PatchParams: the
// field manager the applied fields are recorded under ("" = the client's
// default), so one client writes for several owners; `force` takes over
// fields other managers own.
struct PatchParams {
  std::string fieldManager;
  bool force = true;
  bool dryRun = false;

  static PatchParams apply(std::string manager) { return {std::move(manager), true, false}; }
};

class Client {
 public:
  explicit Client(std::shared_ptr<Transport> transport, ClientOptions options = {});

  StatusOr<Object> get(const Resource& r, const std::string& ns, const std::string& name);
  // Follows `continue` until the last page; one consistent snapshot. An expired
  // continue token falls back to one unpaginated list (as client-go's pager).
  StatusOr<ObjectList> list(const Resource& r, const std::string& ns, ListOptions options = {});
  // One page; `continueToken` (out) is empty on the last page.
  StatusOr<ObjectList> listPage(const Resource& r, const std::string& ns,
                                const ListOptions& options, std::string* continueToken);
  // Namespace comes from the object's metadata (or `ns` when given).
  // `dryRun`: the server validates and admits (webhooks included) but stores nothing.
  StatusOr<Object> create(const Resource& r, const Object& obj, const std::string& ns = "",
                          bool dryRun = false);
  // PUT with the object's resourceVersion: Conflict when stale.
  StatusOr<Object> update(const Resource& r, const Object& obj);
  StatusOr<Object> updateStatus(const Resource& r, const Object& obj);
  Status remove(const Resource& r, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {});
  StatusOr<Object> mergePatch(const Resource& r, const std::string& ns, const std::string& name,
                              const nlohmann::json& patch, const std::string& subresource = "");
  // Merge-patches `{"status": status}` through the status subresource.
  StatusOr<Object> patchStatus(const Resource& r, const std::string& ns, const std::string& name,
                               const nlohmann::json& status);
  // Server-side apply of `obj` (apiVersion, kind, metadata.name required).
  StatusOr<Object> apply(const Resource& r, const Object& obj, const PatchParams& params = {});
  StatusOr<Object> applyStatus(const Resource& r, const Object& obj,
                               const PatchParams& params = {});
  StatusOr<std::unique_ptr<Watcher>> watch(const Resource& r, const std::string& ns,
                                           const WatchOptions& options);

  Transport& transport() { return *transport_; }
  const ClientOptions& options() const { return options_; }

 private:
  StatusOr<Object> call(const Request& req);
  ApplyOptions applyOptions(const PatchParams& params) const;

  std::shared_ptr<Transport> transport_;
  ClientOptions options_;
};

struct RetryOptions {
  int attempts = 5;  // client-go retry.DefaultRetry
  Clock::Duration delay = std::chrono::milliseconds(10);
  double jitter = 0.1;
  Clock* clock = nullptr;  // SystemClock when null
};

// Runs `fn` until it returns something other than Conflict, at most `attempts`
// times with a small jittered delay; `fn` must re-read the object each time.
Status retryOnConflict(const std::function<Status()>& fn, const RetryOptions& options = {});

}  // namespace lockstep::kube
