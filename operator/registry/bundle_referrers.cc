#include "operator/registry/bundle_referrers.h"

#include <nlohmann/json.hpp>

namespace lockstep::registry {
namespace {

using nlohmann::json;

// The Sigstore bundle media types: "application/vnd.dev.sigstore.bundle…".
constexpr const char* kBundleMediaTypePrefix = "application/vnd.dev.sigstore.bundle";

bool isBundle(const std::string& mediaType) {
  return mediaType.rfind(kBundleMediaTypePrefix, 0) == 0;
}

// The Sigstore bundle a referrer manifest holds: its one layer, verified by digest.
StatusOr<std::string> readBundle(RegistryClient& client, const std::string& repository,
                                 const std::string& manifestDigest) {
  auto m = client.getManifest(repository, manifestDigest);
  if (!m.isOk()) return m.status();
  json manifest = json::parse(m->bytes, nullptr, false);
  const json layers = manifest.is_object() ? manifest.value("layers", json::array()) : json();
  if (!layers.is_array() || layers.size() != 1 || !layers[0].is_object() ||
      !layers[0].value("digest", json()).is_string() ||
      !isBundle(layers[0].value("mediaType", ""))) {
    return invalidArgument("manifest " + manifestDigest +
                           " does not have exactly one layer holding a Sigstore bundle");
  }
  return client.getBlob(repository, layers[0]["digest"].get<std::string>(), kMaxBundleBytes);
}

}  // namespace

std::string annotationOf(const Descriptor& d, const char* key) {
  auto it = d.annotations.find(key);
  return it == d.annotations.end() ? std::string() : it->second;
}

std::optional<std::string> BundleCache::get(const std::string& manifestDigest) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = bundles_.find(manifestDigest);
  if (it == bundles_.end()) return std::nullopt;
  return it->second;
}

void BundleCache::put(const std::string& manifestDigest, const std::string& bundle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bundles_.size() >= kMaxEntries) bundles_.clear();
  bundles_[manifestDigest] = bundle;
}

size_t BundleCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bundles_.size();
}

StatusOr<BundleReferrers> readBundleReferrers(RegistryClient& client, const std::string& repository,
                                              const std::string& subjectDigest,
                                              BundleCache* cache) {
  auto list = client.referrers(repository, subjectDigest);
  if (!list.isOk()) return list.status();
  BundleReferrers out;
  out.viaTag = list->viaTag;
  for (Descriptor& d : list->descriptors) {
    // A bundle referrer: its artifactType, or (registries that list the config's
    // media type instead, go-containerregistry's) cosign's annotation.
    if (!isBundle(d.artifactType) && d.annotations.count("dev.sigstore.bundle.content") == 0)
      continue;
    BundleReferrer r;
    r.descriptor = std::move(d);
    if (cache != nullptr) {
      if (auto known = cache->get(r.descriptor.digest)) {
        r.bundle = std::move(*known);
        out.referrers.push_back(std::move(r));
        continue;
      }
    }
    auto bundle = readBundle(client, repository, r.descriptor.digest);
    if (bundle.isOk()) {
      r.bundle = std::move(*bundle);
      if (cache != nullptr) cache->put(r.descriptor.digest, r.bundle);
    } else {
      r.error = bundle.status().message();
    }
    out.referrers.push_back(std::move(r));
  }
  return out;
}

}  // namespace lockstep::registry
