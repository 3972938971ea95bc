// RegistryClient: the few OCI distribution API calls stage tags need — fetch a
// manifest by digest (verifying its bytes' sha256), read where a tag points,
// put manifest bytes under a tag with their media type, and push a blob (test
// fixtures and tooling) — with the registry auth flow: on a 401, Basic with
// the credentials, or a Bearer token fetched from the challenge's realm.
//
// Requests are values sent through HttpTransport (the project's one
// cpprestsdk adapter in production, see connect.h; FakeTransport in unit
// tests), one transport per origin (the token realm may be another host).
// Errors name the registry, the repository, the HTTP status and the
// registry's error codes; credentials and tokens never appear in a message.
// Thread-safety: not safe for concurrent use; make one per task.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/registry/credentials.h"
#include "operator/registry/http.h"
#include "operator/registry/reference.h"
#include "operator/registry/referrers.h"

namespace lockstep::registry {

struct Manifest {
  std::string mediaType;
  std::string bytes;   // exactly as served
  std::string digest;  // sha256 of bytes
};

// The referrers of a subject, and how the registry gave them.
struct ReferrersList {
  std::vector<Descriptor> descriptors;
  bool viaTag = false;  // no referrers API: read from the "sha256-<hex>" fallback tag
};

// Where a tag was, and whether tagging moved it.
struct TagOutcome {
  std::string previousDigest;  // "" when the tag did not exist
  bool moved = false;          // false: it already pointed at the digest (no write)
};

// A transport to "https://host[:port]".
using TransportFactory =
    std::function<StatusOr<std::shared_ptr<HttpTransport>>(const std::string& origin)>;

class RegistryClient {
 public:
  // `host` is the API host (PackageRef::apiHost()); requests go to https://host.
  RegistryClient(std::string host, std::optional<Credentials> credentials,
                 TransportFactory transports);

  // GET /v2/<repository>/manifests/<reference> accepting every manifest type.
  // A digest reference is verified: bytes whose sha256 differs are an error.
  StatusOr<Manifest> getManifest(const std::string& repository, const std::string& reference);
  // The digest `tag` points at (sha256 of the manifest bytes); NotFound when no such tag.
  StatusOr<std::string> resolveTag(const std::string& repository, const std::string& tag);
  // PUT the exact bytes under `tag` (or under manifest.digest itself: a push),
  // Content-Type = manifest.mediaType.
  Status putManifest(const std::string& repository, const std::string& tag,
                     const Manifest& manifest);
  // Points `<ref.repository>:tag` at ref.digest: the manifest fetched by digest
  // and verified, re-put under the tag unless the tag already points there.
  StatusOr<TagOutcome> tag(const PackageRef& ref, const std::string& tag);
  // GET /v2/<repository>/blobs/<digest>, following a redirect to another origin
  // once; bytes whose sha256 differs from `digest` are an error. At most
  // `maxBytes` (a larger blob is refused).
  StatusOr<std::string> getBlob(const std::string& repository, const std::string& digest,
                                size_t maxBytes = size_t{64} << 20);
  // HEAD /v2/<repository>/blobs/<digest>: its size (Content-Length) when the
  // registry has it, nullopt when it answers 404 (the mirror's resume check).
  StatusOr<std::optional<int64_t>> blobSize(const std::string& repository,
                                            const std::string& digest);
  // Monolithic blob upload (POST then PUT ?digest=); returns the digest.
  StatusOr<std::string> pushBlob(const std::string& repository, const std::string& bytes);

  // The descriptor of the manifest `digest` (fetched and verified).
  StatusOr<Descriptor> describe(const std::string& repository, const std::string& digest);
  // The manifests whose subject is `subjectDigest`: GET /v2/<repository>/referrers/<digest>
  // (following Link rel="next" pages); a registry without the API (404) is read
  // through the fallback tag, which may not exist (no referrers).
  StatusOr<ReferrersList> referrers(const std::string& repository,
                                    const std::string& subjectDigest);
  // Pushes `artifact` as a referrer of `subject`: the empty config and the layer
  // blob, then the manifest by digest. A registry that does not answer with an
  // OCI-Subject header did not index it: the descriptor is added to the fallback
  // index under referrersTag(subject.digest). Returns the manifest's descriptor.
  // That index is read, extended and written back, and the registry offers no
  // conditional write: another writer (another cluster's operator, the fleet's
  // hub) that read it before this write and writes after drops this entry. So
  // the index is read again after a short pause (settle) and the entry added
  // again until it is seen there (at most kFallbackAttempts writes; then an
  // error says the index kept being overwritten).
  StatusOr<Descriptor> pushReferrer(const std::string& repository, const Descriptor& subject,
                                    const Artifact& artifact);
  static constexpr int kFallbackAttempts = 6;
  // The pause before the fallback index is read back (attempt 1, 2, …); the
  // default sleeps a jittered 150-500 ms times the attempt. Tests pass a no-op.
  void setSettle(std::function<void(int attempt)> settle) { settle_ = std::move(settle); }

  const std::string& host() const { return host_; }

 private:
  // Sends with the cached authorization for `actions` ("pull" or "pull,push"),
  // answering one 401 challenge and retrying once.
  StatusOr<HttpResponse> send(HttpRequest request, const std::string& origin,
                              const std::string& repository, const std::string& actions);
  StatusOr<std::shared_ptr<HttpTransport>> transport(const std::string& origin);
  Status authorize(const std::string& challengeHeader, const std::string& repository,
                   const std::string& actions);
  StatusOr<HttpResponse> putManifestResponse(const std::string& repository,
                                             const std::string& reference,
                                             const Manifest& manifest);
  Status httpError(const HttpResponse& r, const std::string& repository,
                   const std::string& what) const;

  std::string host_;
  std::string origin_;
  std::optional<Credentials> credentials_;
  TransportFactory factory_;
  std::map<std::string, std::shared_ptr<HttpTransport>> transports_;
  std::map<std::string, std::string> authorization_;  // by actions
  std::function<void(int)> settle_;
};

}  // namespace lockstep::registry
