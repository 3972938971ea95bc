// Request: one API call as a value (method, escaped path, query, headers,
// body) built without a socket, so the exact URI of every verb is tested
// against golden strings. The transport sends it; nothing here does I/O.
// Thread-safety: values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/resource.h"

namespace lockstep::kube {

struct Request {
  std::string method = "GET";
  std::string path;  // already escaped: "/api/v1/namespaces/ns/pods/name"
  std::vector<std::pair<std::string, std::string>> query;  // unescaped; encoded by uri()
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool watch = false;  // a streaming response: read with Transport::openStream

  // Path and query, escaped, query keys sorted (the form Go's url.Values encodes).
  std::string uri() const;
  std::string header(const std::string& name) const;
  // "GET /api/v1/..." for logs: never includes headers or body.
  std::string describe() const;
};

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;       // "" quorum read, "0" any cached, else not older than
  std::string resourceVersionMatch;  // "", "NotOlderThan", "Exact"
  int64_t limit = 0;                 // page size; 0 = everything at once
  std::string continueToken;
  int timeoutSeconds = 0;
  // The objects' metadata only (PartialObjectMetadataList, as client-go's
  // metadata informers ask): items carry apiVersion, kind and metadata, no spec
  // or status.
  bool metadataOnly = false;
};

struct WatchOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;
  bool allowWatchBookmarks = true;
  int timeoutSeconds = 0;     // server-side timeout; the client's idle timeout must exceed it
  bool metadataOnly = false;  // events carry PartialObjectMetadata objects (ListOptions)
};

struct Preconditions {
  std::string uid;
  std::string resourceVersion;
};

struct DeleteOptions {
  std::string propagationPolicy;  // "Foreground", "Background", "Orphan" or "" (server default)
  Preconditions preconditions;
  std::optional<int64_t> gracePeriodSeconds;
  bool dryRun = false;
};

struct WriteOptions {
  std::string fieldManager;  // recorded in managedFields; "" leaves it to the server
  bool dryRun = false;
};

struct ApplyOptions {
  std::string fieldManager = "lockstep";  // server-side apply needs one
  bool force = false;                     // take ownership of conflicting fields
  bool dryRun = false;
};

// Escapes one path segment (RFC 3986 pchar; '/' and '%' always escaped).
std::string escapePathSegment(const std::string& s);
// Escapes a query key or value like Go's url.QueryEscape (space as '+').
std::string escapeQuery(const std::string& s);

// "/api/v1/namespaces/{ns}/pods[/{name}[/{subresource}]]"; ns ignored for cluster-scoped.
std::string resourcePath(const Resource& r, const std::string& ns, const std::string& name = "",
                         const std::string& subresource = "");

Request getRequest(const Resource& r, const std::string& ns, const std::string& name,
                   const std::string& subresource = "");
Request listRequest(const Resource& r, const std::string& ns, const ListOptions& o);
Request watchRequest(const Resource& r, const std::string& ns, const WatchOptions& o);
Request createRequest(const Resource& r, const std::string& ns, const nlohmann::json& obj,
                      const WriteOptions& o = {});
Request updateRequest(const Resource& r, const std::string& ns, const std::string& name,
                      const nlohmann::json& obj, const std::string& subresource = "",
                      const WriteOptions& o = {});
Request deleteRequest(const Resource& r, const std::string& ns, const std::string& name,
                      const DeleteOptions& o = {});
Request mergePatchRequest(const Resource& r, const std::string& ns, const std::string& name,
                          const nlohmann::json& patch, const std::string& subresource = "",
                          const WriteOptions& o = {});
Request applyRequest(const Resource& r, const std::string& ns, const std::string& name,
                     const nlohmann::json& obj, const ApplyOptions& o,
                     const std::string& subresource = "");

}  // namespace lockstep::kube
