#include "operator/registry/distribution.h"

#include <chrono>
#include <random>
#include <thread>
#include <utility>

namespace lockstep::registry {
namespace {

std::string manifestPath(const std::string& repository, const std::string& reference) {
  return "/v2/" + repository + "/manifests/" + reference;
}

}  // namespace

RegistryClient::RegistryClient(std::string host, std::optional<Credentials> credentials,
                               TransportFactory transports)
    : host_(std::move(host)),
      origin_("https://" + host_),
      credentials_(std::move(credentials)),
      factory_(std::move(transports)) {}

StatusOr<std::shared_ptr<HttpTransport>> RegistryClient::transport(const std::string& origin) {
  auto it = transports_.find(origin);
  if (it != transports_.end()) return it->second;
  auto t = factory_(origin);
  if (!t.isOk()) return t.status();
  transports_.emplace(origin, *t);
  return *t;
}

Status RegistryClient::httpError(const HttpResponse& r, const std::string& repository,
                                 const std::string& what) const {
  std::string msg = "registry " + host_ + ", repository " + repository + ": " + what + ": HTTP " +
                    std::to_string(r.status);
  if (std::string errors = describeRegistryErrors(r.body); !errors.empty()) msg += ": " + errors;
  return {codeForHttpStatus(r.status), msg};
}

Status RegistryClient::authorize(const std::string& header, const std::string& repository,
                                 const std::string& actions) {
  const std::string where = "registry " + host_ + ", repository " + repository;
  auto challenge = parseChallenge(header);
  if (!challenge.isOk()) return challenge.status().withContext(where);
  if (challenge->scheme == "basic") {
    if (!credentials_ || credentials_->username.empty()) {
      return {Code::kUnauthorized,
              where + ": the registry asks for Basic credentials and none are configured for " +
                  host_ + " (registryTags.secretRef's auths)"};
    }
    authorization_[actions] = credentials_->basicAuthorization();
    return Status::ok();
  }
  if (challenge->scheme != "bearer") {
    return {Code::kUnauthorized,
            where + ": unsupported auth scheme \"" + challenge->scheme + "\" in WWW-Authenticate"};
  }
  auto tr = tokenRequestFor(*challenge, repository, actions);
  if (!tr.isOk()) return tr.status().withContext(where);
  HttpRequest req;
  req.target = tr->path.empty() ? "/" : tr->path;
  char sep = '?';
  for (const auto& [k, v] : tr->query) {
    req.target += sep + queryEscape(k) + "=" + queryEscape(v);
    sep = '&';
  }
  req.headers.emplace_back("Accept", "application/json");
  if (credentials_) {
    if (!credentials_->identityToken.empty()) {
      // An identity token is an OAuth2 refresh token: exchanged by POST (distribution's token
      // spec).
      req.method = "POST";
      req.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
      req.body =
          "grant_type=refresh_token&refresh_token=" + queryEscape(credentials_->identityToken) +
          "&client_id=lockstep&service=" + queryEscape(challenge->param("service")) +
          "&scope=" + queryEscape("repository:" + repository + ":" + actions);
      req.target = tr->path.empty() ? "/" : tr->path;
    } else {
      req.headers.emplace_back("Authorization", credentials_->basicAuthorization());
    }
  }
  auto t = transport(tr->origin);
  if (!t.isOk()) return t.status().withContext(where + ": token realm " + tr->origin);
  auto resp = (*t)->send(req);
  if (!resp.isOk()) {
    return resp.status().withContext(where + ": token realm " + tr->origin + tr->path);
  }
  if (resp->status != 200) {
    std::string msg = where + ": token realm " + tr->origin + tr->path + " answered HTTP " +
                      std::to_string(resp->status);
    if (std::string errors = describeRegistryErrors(resp->body); !errors.empty())
      msg += ": " + errors;
    return {resp->status == 401 || resp->status == 403 ? Code::kUnauthorized
                                                       : codeForHttpStatus(resp->status),
            msg};
  }
  auto token = decodeTokenResponse(resp->body);
  if (!token.isOk()) return token.status().withContext(where + ": token realm " + tr->origin);
  authorization_[actions] = "Bearer " + *token;
  return Status::ok();
}

StatusOr<HttpResponse> RegistryClient::send(HttpRequest request, const std::string& origin,
                                            const std::string& repository,
                                            const std::string& actions) {
  auto t = transport(origin);
  if (!t.isOk()) return t.status();
  const HttpRequest bare = request;
  for (int attempt = 0; attempt < 2; ++attempt) {
    request = bare;
    if (auto it = authorization_.find(actions); it != authorization_.end())
      request.headers.emplace_back("Authorization", it->second);
    auto resp = (*t)->send(request);
    if (!resp.isOk()) {
      return resp.status().withContext("registry " + host_ + ", repository " + repository);
    }
    if (resp->status != 401 || attempt == 1) return resp;
    std::string challenge = resp->header("WWW-Authenticate");
    if (challenge.empty()) return resp;
    LOCKSTEP_RETURN_IF_ERROR(authorize(challenge, repository, actions));
  }
  return internalError("unreachable");
}

StatusOr<Manifest> RegistryClient::getManifest(const std::string& repository,
                                               const std::string& reference) {
  HttpRequest r;
  r.target = manifestPath(repository, reference);
  r.headers.emplace_back("Accept", manifestAccept());
  auto resp = send(r, origin_, repository, "pull");
  if (!resp.isOk()) return resp.status();
  if (resp->status != 200) return httpError(*resp, repository, "GET manifest " + reference);
  Manifest m;
  m.bytes = std::move(resp->body);
  m.digest = sha256Digest(m.bytes);
  if (reference.rfind("sha256:", 0) == 0 && m.digest != reference) {
    // Verify what we trust: the digest is the only identity of a package.
    return invalidArgument("registry " + host_ + ", repository " + repository + ": manifest " +
                           reference + " was served with bytes whose digest is " + m.digest);
  }
  auto type = detectMediaType(resp->header("Content-Type"), m.bytes);
  if (!type.isOk()) {
    return type.status().withContext("registry " + host_ + ", repository " + repository +
                                     ", manifest " + reference);
  }
  m.mediaType = *type;
  return m;
}

StatusOr<std::string> RegistryClient::resolveTag(const std::string& repository,
                                                 const std::string& tag) {
  if (!isValidTag(tag)) return invalidArgument("\"" + tag + "\" is not a valid tag");
  auto m = getManifest(repository, tag);
  if (!m.isOk()) return m.status();
  return m->digest;
}

StatusOr<HttpResponse> RegistryClient::putManifestResponse(const std::string& repository,
                                                           const std::string& reference,
                                                           const Manifest& manifest) {
  HttpRequest r;
  r.method = "PUT";
  r.target = manifestPath(repository, reference);
  r.headers.emplace_back("Content-Type", manifest.mediaType);
  r.body = manifest.bytes;
  auto resp = send(r, origin_, repository, "pull,push");
  if (!resp.isOk()) return resp.status();
  if (resp->status != 201 && resp->status != 200) {
    return httpError(*resp, repository, "PUT manifest " + reference);
  }
  if (std::string d = resp->header("Docker-Content-Digest"); !d.empty() && d != manifest.digest) {
    return internalError("registry " + host_ + ", repository " + repository + ": PUT manifest " +
                         reference + " stored digest " + d + ", not " + manifest.digest);
  }
  return resp;
}

Status RegistryClient::putManifest(const std::string& repository, const std::string& tag,
                                   const Manifest& manifest) {
  if (!isValidTag(tag) && tag != manifest.digest)
    return invalidArgument("\"" + tag + "\" is not a valid tag");
  auto resp = putManifestResponse(repository, tag, manifest);
  return resp.isOk() ? Status::ok() : resp.status();
}

StatusOr<Descriptor> RegistryClient::describe(const std::string& repository,
                                              const std::string& digest) {
  auto m = getManifest(repository, digest);
  if (!m.isOk()) return m.status();
  Descriptor d;
  d.mediaType = m->mediaType;
  d.digest = m->digest;
  d.size = static_cast<int64_t>(m->bytes.size());
  return d;
}

StatusOr<ReferrersList> RegistryClient::referrers(const std::string& repository,
                                                  const std::string& subjectDigest) {
  ReferrersList out;
  std::string origin = origin_;
  std::string target = "/v2/" + repository + "/referrers/" + subjectDigest;
  for (int page = 0; page < 100 && !target.empty(); ++page) {
    HttpRequest r;
    r.target = target;
    r.headers.emplace_back("Accept", kOciIndex);
    auto resp = send(r, origin, repository, "pull");
    if (!resp.isOk()) return resp.status();
    if (resp->status == 404 && page == 0) {
      // No referrers API (distribution-spec v1.1: "the registry does not support
      // the referrers API" answers 404): the tag schema.
      out.viaTag = true;
      auto index = getManifest(repository, referrersTag(subjectDigest));
      if (!index.isOk()) {
        if (index.status().code() == Code::kNotFound) return out;
        return index.status();
      }
      auto parsed =
          parseReferrersIndex(index->bytes, "registry " + host_ + ", repository " + repository +
                                                ", tag " + referrersTag(subjectDigest));
      if (!parsed.isOk()) return parsed.status();
      out.descriptors = std::move(*parsed);
      return out;
    }
    if (resp->status != 200) {
      return httpError(*resp, repository, "GET referrers of " + subjectDigest);
    }
    auto parsed =
        parseReferrersIndex(resp->body, "registry " + host_ + ", repository " + repository +
                                            ", referrers of " + subjectDigest);
    if (!parsed.isOk()) return parsed.status();
    for (Descriptor& d : *parsed) out.descriptors.push_back(std::move(d));
    // Link: <url>; rel="next" (RFC 5988), as the catalog and tags lists page.
    target.clear();
    const std::string link = resp->header("Link");
    if (link.find("rel=\"next\"") != std::string::npos) {
      auto open = link.find('<');
      auto close = link.find('>', open == std::string::npos ? 0 : open);
      if (open != std::string::npos && close != std::string::npos) {
        std::string next = link.substr(open + 1, close - open - 1);
        if (!next.empty() && next.front() != '/') {
          auto split = splitUrl(next);
          if (!split.isOk()) return split.status().withContext("registry " + host_ + ": Link");
          origin = split->first;
          next = split->second;
        }
        target = next;
      }
    }
  }
  return out;
}

StatusOr<Descriptor> RegistryClient::pushReferrer(const std::string& repository,
                                                  const Descriptor& subject,
                                                  const Artifact& artifact) {
  auto config = pushBlob(repository, kEmptyBlob);
  if (!config.isOk()) return config.status();
  auto layer = pushBlob(repository, artifact.bytes);
  if (!layer.isOk()) return layer.status();
  Manifest m;
  m.mediaType = kOciManifest;
  m.bytes = referrerManifest(subject, artifact);
  m.digest = sha256Digest(m.bytes);
  auto resp = putManifestResponse(repository, m.digest, m);
  if (!resp.isOk()) return resp.status();
  auto descriptor = referrerDescriptor(m.bytes);
  if (!descriptor.isOk()) return descriptor.status();
  if (resp->header("OCI-Subject") == subject.digest) return descriptor;
  // Not indexed by the registry: the fallback tag's index, read, extended,
  // written, and read again after a pause until it holds this entry (a
  // concurrent writer from an older read may have dropped it).
  const std::string tag = referrersTag(subject.digest);
  for (int attempt = 1; attempt <= kFallbackAttempts + 1; ++attempt) {
    std::string current;
    auto existing = getManifest(repository, tag);
    if (existing.isOk()) {
      current = existing->bytes;
    } else if (existing.status().code() != Code::kNotFound) {
      return existing.status();
    }
    auto index = indexWith(current, *descriptor);
    if (!index.isOk()) {
      return index.status().withContext("registry " + host_ + ", repository " + repository +
                                        ", tag " + tag);
    }
    if (*index == current) return descriptor;  // there (before, or since this write)
    if (attempt > kFallbackAttempts) break;
    Manifest im;
    im.mediaType = kOciIndex;
    im.bytes = *index;
    im.digest = sha256Digest(im.bytes);
    LOCKSTEP_RETURN_IF_ERROR(putManifest(repository, tag, im));
    if (settle_) {
      settle_(attempt);
    } else {
      thread_local std::mt19937 jitter{std::random_device{}()};
      const int ms = 150 + static_cast<int>(jitter() % 350);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms * attempt));
    }
  }
  return Status(Code::kUnavailable, "registry " + host_ + ", repository " + repository + ", tag " +
                                        tag +
                                        ": the referrers index lost this entry to concurrent "
                                        "writers " +
                                        std::to_string(kFallbackAttempts) + " times; retry later");
}

StatusOr<TagOutcome> RegistryClient::tag(const PackageRef& ref, const std::string& tag) {
  if (!isValidTag(tag)) return invalidArgument("\"" + tag + "\" is not a valid tag");
  auto m = getManifest(ref.repository, ref.digest);
  if (!m.isOk()) return m.status();
  TagOutcome out;
  auto current = resolveTag(ref.repository, tag);
  if (current.isOk()) {
    out.previousDigest = *current;
  } else if (current.status().code() != Code::kNotFound) {
    return current.status();
  }
  if (out.previousDigest == ref.digest) return out;
  LOCKSTEP_RETURN_IF_ERROR(putManifest(ref.repository, tag, *m));
  out.moved = true;
  return out;
}

StatusOr<std::string> RegistryClient::getBlob(const std::string& repository,
                                              const std::string& digest, size_t maxBytes) {
  HttpRequest r;
  r.target = "/v2/" + repository + "/blobs/" + digest;
  auto resp = send(r, origin_, repository, "pull");
  if (!resp.isOk()) return resp.status();
  if (resp->status == 307 || resp->status == 302 || resp->status == 303) {
    // Storage behind a redirect (S3, a CDN): the URL carries its own authorization.
    std::string location = resp->header("Location");
    auto split = splitUrl(location);
    if (!split.isOk()) return split.status().withContext("registry " + host_ + ": blob redirect");
    auto t = transport(split->first);
    if (!t.isOk()) return t.status();
    HttpRequest follow;
    follow.target = split->second;
    resp = (*t)->send(follow);
    if (!resp.isOk()) return resp.status().withContext("registry " + host_ + ": blob redirect");
  }
  if (resp->status != 200) return httpError(*resp, repository, "GET blob " + digest);
  if (resp->body.size() > maxBytes) {
    return invalidArgument("registry " + host_ + ", repository " + repository + ": blob " + digest +
                           " is " + std::to_string(resp->body.size()) + " bytes, more than " +
                           std::to_string(maxBytes));
  }
  if (sha256Digest(resp->body) != digest) {
    return invalidArgument("registry " + host_ + ", repository " + repository + ": blob " + digest +
                           " was served with bytes whose digest is " + sha256Digest(resp->body));
  }
  return std::move(resp->body);
}

StatusOr<std::optional<int64_t>> RegistryClient::blobSize(const std::string& repository,
                                                          const std::string& digest) {
  HttpRequest r;
  r.method = "HEAD";
  r.target = "/v2/" + repository + "/blobs/" + digest;
  auto resp = send(r, origin_, repository, "pull");
  if (!resp.isOk()) return resp.status();
  if (resp->status == 404) return std::optional<int64_t>();
  if (resp->status == 307 || resp->status == 302 || resp->status == 303) {
    // Storage behind a redirect: the registry knows the blob; its size is not said here.
    return std::optional<int64_t>(-1);
  }
  if (resp->status != 200) return httpError(*resp, repository, "HEAD blob " + digest);
  int64_t size = -1;
  const std::string length = resp->header("Content-Length");
  if (!length.empty() && length.size() < 19 &&
      length.find_first_not_of("0123456789") == std::string::npos) {
    size = std::stoll(length);
  }
  return std::optional<int64_t>(size);
}

StatusOr<std::string> RegistryClient::pushBlob(const std::string& repository,
                                               const std::string& bytes) {
  const std::string digest = sha256Digest(bytes);
  HttpRequest start;
  start.method = "POST";
  start.target = "/v2/" + repository + "/blobs/uploads/";
  auto resp = send(start, origin_, repository, "pull,push");
  if (!resp.isOk()) return resp.status();
  if (resp->status != 202) return httpError(*resp, repository, "POST blob upload");
  std::string location = resp->header("Location");
  if (location.empty()) {
    return internalError("registry " + host_ + ": blob upload answered 202 without a Location");
  }
  std::string origin = origin_;
  std::string rest = location;
  if (location.front() != '/') {
    auto split = splitUrl(location);
    if (!split.isOk()) return split.status().withContext("registry " + host_ + ": upload Location");
    origin = split->first;
    rest = split->second;
  }
  HttpRequest put;
  put.method = "PUT";
  // The Location is already escaped: keep it as it is and append the digest.
  put.target =
      rest + (rest.find('?') == std::string::npos ? "?" : "&") + "digest=" + queryEscape(digest);
  put.headers.emplace_back("Content-Type", "application/octet-stream");
  put.body = bytes;
  resp = send(put, origin, repository, "pull,push");
  if (!resp.isOk()) return resp.status();
  if (resp->status != 201) return httpError(*resp, repository, "PUT blob " + digest);
  return digest;
}

}  // namespace lockstep::registry
