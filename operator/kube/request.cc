#include "operator/kube/request.h"

#include <algorithm>

namespace lockstep::kube {
namespace {

constexpr const char* kHex = "0123456789ABCDEF";

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

void percent(std::string& out, unsigned char c) {
  out += '%';
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

Request withJsonHeaders(Request r) {
  r.headers.emplace_back("Accept", "application/json");
  return r;
}

// Asks for the objects' metadata only (the API server's PartialObjectMetadata
// transformation; a server that cannot answers with the whole objects after the
// comma, which the reader's metadata-only transform then trims).
Request withMetadataHeaders(Request r, const char* as) {
  r.headers.emplace_back(
      "Accept", std::string("application/json;as=") + as + ";g=meta.k8s.io;v=v1,application/json");
  return r;
}

void addWriteOptions(Request& req, const WriteOptions& o) {
  if (!o.fieldManager.empty()) req.query.emplace_back("fieldManager", o.fieldManager);
  if (o.dryRun) req.query.emplace_back("dryRun", "All");
}

}  // namespace

std::string escapePathSegment(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (unreserved(c) || c == ':' || c == '@') {
      out += static_cast<char>(c);
    } else {
      percent(out, c);
    }
  }
  return out;
}

std::string escapeQuery(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (unreserved(c)) {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      percent(out, c);
    }
  }
  return out;
}

std::string Request::uri() const {
  std::string out = path;
  if (query.empty()) return out;
  auto sorted = query;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  char sep = '?';
  for (const auto& [k, v] : sorted) {
    out += sep;
    out += escapeQuery(k);
    out += '=';
    out += escapeQuery(v);
    sep = '&';
  }
  return out;
}

std::string Request::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(a) == std::tolower(b);
        })) {
      return v;
    }
  }
  return "";
}

std::string Request::describe() const { return method + " " + uri(); }

std::string resourcePath(const Resource& r, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  std::string p = r.group.empty()
                      ? "/api/" + escapePathSegment(r.version)
                      : "/apis/" + escapePathSegment(r.group) + "/" + escapePathSegment(r.version);
  if (r.namespaced && !ns.empty()) p += "/namespaces/" + escapePathSegment(ns);
  p += "/" + escapePathSegment(r.resource);
  if (!name.empty()) {
    p += "/" + escapePathSegment(name);
    if (!subresource.empty()) p += "/" + escapePathSegment(subresource);
  }
  return p;
}

Request getRequest(const Resource& r, const std::string& ns, const std::string& name,
                   const std::string& subresource) {
  Request req;
  req.method = "GET";
  req.path = resourcePath(r, ns, name, subresource);
  return withJsonHeaders(std::move(req));
}

Request listRequest(const Resource& r, const std::string& ns, const ListOptions& o) {
  Request req;
  req.method = "GET";
  req.path = resourcePath(r, ns);
  if (!o.labelSelector.empty()) req.query.emplace_back("labelSelector", o.labelSelector);
  if (!o.fieldSelector.empty()) req.query.emplace_back("fieldSelector", o.fieldSelector);
  // A continuation already pins the snapshot; the server rejects a resourceVersion with it.
  if (!o.continueToken.empty()) {
    req.query.emplace_back("continue", o.continueToken);
  } else {
    if (!o.resourceVersion.empty()) req.query.emplace_back("resourceVersion", o.resourceVersion);
    if (!o.resourceVersionMatch.empty())
      req.query.emplace_back("resourceVersionMatch", o.resourceVersionMatch);
  }
  if (o.limit > 0) req.query.emplace_back("limit", std::to_string(o.limit));
  if (o.timeoutSeconds > 0)
    req.query.emplace_back("timeoutSeconds", std::to_string(o.timeoutSeconds));
  if (o.metadataOnly) return withMetadataHeaders(std::move(req), "PartialObjectMetadataList");
  return withJsonHeaders(std::move(req));
}

Request watchRequest(const Resource& r, const std::string& ns, const WatchOptions& o) {
  Request req;
  req.method = "GET";
  req.path = resourcePath(r, ns);
  req.watch = true;
  req.query.emplace_back("watch", "true");
  if (!o.labelSelector.empty()) req.query.emplace_back("labelSelector", o.labelSelector);
  if (!o.fieldSelector.empty()) req.query.emplace_back("fieldSelector", o.fieldSelector);
  if (!o.resourceVersion.empty()) req.query.emplace_back("resourceVersion", o.resourceVersion);
  if (o.allowWatchBookmarks) req.query.emplace_back("allowWatchBookmarks", "true");
  if (o.timeoutSeconds > 0)
    req.query.emplace_back("timeoutSeconds", std::to_string(o.timeoutSeconds));
  if (o.metadataOnly) return withMetadataHeaders(std::move(req), "PartialObjectMetadata");
  return withJsonHeaders(std::move(req));
}

Request createRequest(const Resource& r, const std::string& ns, const nlohmann::json& obj,
                      const WriteOptions& o) {
  Request req;
  req.method = "POST";
  req.path = resourcePath(r, ns);
  addWriteOptions(req, o);
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = obj.dump();
  return withJsonHeaders(std::move(req));
}

Request updateRequest(const Resource& r, const std::string& ns, const std::string& name,
                      const nlohmann::json& obj, const std::string& subresource,
                      const WriteOptions& o) {
  Request req;
  req.method = "PUT";
  req.path = resourcePath(r, ns, name, subresource);
  addWriteOptions(req, o);
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = obj.dump();
  return withJsonHeaders(std::move(req));
}

Request deleteRequest(const Resource& r, const std::string& ns, const std::string& name,
                      const DeleteOptions& o) {
  Request req;
  req.method = "DELETE";
  req.path = resourcePath(r, ns, name);
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!o.propagationPolicy.empty()) body["propagationPolicy"] = o.propagationPolicy;
  if (!o.preconditions.uid.empty()) body["preconditions"]["uid"] = o.preconditions.uid;
  if (!o.preconditions.resourceVersion.empty())
    body["preconditions"]["resourceVersion"] = o.preconditions.resourceVersion;
  if (o.gracePeriodSeconds) body["gracePeriodSeconds"] = *o.gracePeriodSeconds;
  if (o.dryRun) body["dryRun"] = nlohmann::json::array({"All"});
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = body.dump();
  return withJsonHeaders(std::move(req));
}

Request mergePatchRequest(const Resource& r, const std::string& ns, const std::string& name,
                          const nlohmann::json& patch, const std::string& subresource,
                          const WriteOptions& o) {
  Request req;
  req.method = "PATCH";
  req.path = resourcePath(r, ns, name, subresource);
  addWriteOptions(req, o);
  req.headers.emplace_back("Content-Type", "application/merge-patch+json");
  req.body = patch.dump();
  return withJsonHeaders(std::move(req));
}

Request applyRequest(const Resource& r, const std::string& ns, const std::string& name,
                     const nlohmann::json& obj, const ApplyOptions& o,
                     const std::string& subresource) {
  Request req;
  req.method = "PATCH";
  req.path = resourcePath(r, ns, name, subresource);
  req.query.emplace_back("fieldManager", o.fieldManager);
  if (o.force) req.query.emplace_back("force", "true");
  if (o.dryRun) req.query.emplace_back("dryRun", "All");
  // JSON is YAML: the apply body is sent as JSON text under the apply content type.
  req.headers.emplace_back("Content-Type", "application/apply-patch+yaml");
  req.body = obj.dump();
  return withJsonHeaders(std::move(req));
}

}  // namespace lockstep::kube
