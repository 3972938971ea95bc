#include "webhooks/kube_cert_store.h"

#include "operator/kube/kube_config.h"
#include "operator/kube/object.h"
#include "operator/kube/resource.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;

constexpr const char* kSecretType = "kubernetes.io/tls";

const kube::Resource kMutatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                    "mutatingwebhookconfigurations",
                                                    "MutatingWebhookConfiguration", false};

StatusOr<std::string> field(const json& data, const char* key) {
  if (!data.contains(key) || !data[key].is_string()) return std::string();
  auto decoded = kube::base64Decode(data[key].get<std::string>());
  if (!decoded.isOk()) return decoded.status().withContext(std::string("secret data ") + key);
  return *decoded;
}

}  // namespace

StatusOr<std::optional<CertBundle>> SecretCertStore::load() {
  auto secret = client_->get(kube::resources::kSecrets, ns_, name_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!secret.isOk()) {
    if (secret.status().code() == Code::kNotFound) {
      resourceVersion_.clear();
      return std::optional<CertBundle>();
    }
    return secret.status().withContext("reading Secret " + ns_ + "/" + name_);
  }
  // Never write over a Secret that is not ours: its type is immutable, so an
  // update would fail on every round anyway.
  if (std::string type = secret->value("type", ""); type != kSecretType) {
    resourceVersion_.clear();
    return Status(Code::kInvalid, "Secret " + ns_ + "/" + name_ + " has type \"" + type +
                                      "\", not " + kSecretType +
                                      ": it is not a Lockstep certificate Secret; left "
                                      "untouched (delete it, or choose another --cert-secret)");
  }
  resourceVersion_ = kube::resourceVersion(*secret);
  const json data = secret->value("data", json::object());
  CertBundle b;
  struct {
    const char* key;
    std::string* out;
  } fields[] = {{"ca.crt", &b.caCertPem},
                {"ca.key", &b.caKeyPem},
                {"tls.crt", &b.certPem},
                {"tls.key", &b.keyPem},
                {"ca-previous.crt", &b.previousCaCertPem}};
  for (auto& f : fields) {
    auto v = field(data, f.key);
    if (!v.isOk()) return v.status();
    *f.out = std::move(*v);
  }
  return std::optional<CertBundle>(std::move(b));
}

Status SecretCertStore::save(const CertBundle& b) {
  json data = {{"ca.crt", kube::base64Encode(b.caCertPem)},
               {"ca.key", kube::base64Encode(b.caKeyPem)},
               {"tls.crt", kube::base64Encode(b.certPem)},
               {"tls.key", kube::base64Encode(b.keyPem)}};
  if (!b.previousCaCertPem.empty())
    data["ca-previous.crt"] = kube::base64Encode(b.previousCaCertPem);
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", kSecretType},
                 {"metadata",
                  {{"name", name_},
                   {"namespace", ns_},
                   {"labels",
                    {{"app.kubernetes.io/part-of", "lockstep"},
                     {"app.kubernetes.io/component", "webhook-certificates"}}}}},
                 {"data", data}};
  std::lock_guard<std::mutex> lock(mu_);
  StatusOr<kube::Object> written = Status(Code::kInternal, "unset");
  if (resourceVersion_.empty()) {
    written = client_->create(kube::resources::kSecrets, secret, ns_);
    // Another replica created it first: theirs wins (the caller reloads).
    if (!written.isOk() && written.status().code() == Code::kAlreadyExists) {
      return Status(Code::kConflict,
                    "Secret " + ns_ + "/" + name_ + " was created by another writer");
    }
  } else {
    secret["metadata"]["resourceVersion"] = resourceVersion_;
    written = client_->update(kube::resources::kSecrets, secret);
  }
  if (!written.isOk()) return written.status().withContext("writing Secret " + ns_ + "/" + name_);
  resourceVersion_ = kube::resourceVersion(*written);
  return Status::ok();
}

StatusOr<bool> WebhookConfigCaBundlePatcher::patchOne(const kube::Resource& r,
                                                      const std::string& name,
                                                      const std::string& encoded) {
  const std::string what = r.kind + " " + name;
  bool wrote = false;
  Status s = kube::retryOnConflict([&]() -> Status {
    auto config = client_->get(r, "", name);
    if (!config.isOk()) return config.status().withContext("reading " + what);
    kube::Object updated = *config;
    bool changed = false;
    for (auto& w : updated["webhooks"]) {
      if (w["clientConfig"].value("caBundle", "") != encoded) {
        w["clientConfig"]["caBundle"] = encoded;
        changed = true;
      }
    }
    if (!changed) return Status::ok();
    auto written = client_->update(r, updated);
    if (!written.isOk()) return written.status().withContext("updating " + what);
    wrote = true;
    return Status::ok();
  });
  if (!s.isOk()) return s;
  return wrote;
}

StatusOr<bool> WebhookConfigCaBundlePatcher::patchCaBundle(const std::string& caBundlePem) {
  const std::string encoded = kube::base64Encode(caBundlePem);
  auto validating =
      patchOne(kube::resources::kValidatingWebhookConfigurations, configName_, encoded);
  if (!validating.isOk() || mutatingConfigName_.empty()) return validating;
  auto mutating = patchOne(kMutatingWebhookConfigurations, mutatingConfigName_, encoded);
  if (!mutating.isOk()) return mutating.status();
  return *validating || *mutating;
}

}  // namespace lockstep::webhooks
