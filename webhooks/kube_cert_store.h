// Kubernetes-backed certificate storage for self-managed webhook certificates:
// the bundle lives in a Secret of the operator's namespace, and the CA bundle
// is patched into the operator's own webhook configurations (validating and
// mutating).
// Thread-safety: each call is independent; load()/save() share the last seen
// resourceVersion under a mutex (optimistic concurrency between replicas).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "operator/kube/client.h"
#include "webhooks/certs/self_managed.h"

namespace lockstep::webhooks {

// Secret keys: ca.crt, ca.key, tls.crt, tls.key, ca-previous.crt (type kubernetes.io/tls).
// load() returns the keys as stored, malformed or not (SelfManagedCertificates
// re-issues what does not parse, saving over it with the resourceVersion it
// read); a Secret of another type is an error (Code::kInvalid) and is never
// written.
class SecretCertStore final : public CertStore {
 public:
  SecretCertStore(std::shared_ptr<kube::Client> client, std::string ns, std::string name)
      : client_(std::move(client)), ns_(std::move(ns)), name_(std::move(name)) {}
  StatusOr<std::optional<CertBundle>> load() override;
  Status save(const CertBundle& bundle) override;

 private:
  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::string name_;
  std::mutex mu_;
  std::string resourceVersion_;  // "" = we saw no Secret: save() creates
};

// Sets clientConfig.caBundle on every webhook of the operator's webhook
// configurations: the ValidatingWebhookConfiguration `configName` and, when
// `mutatingConfigName` is not empty, the MutatingWebhookConfiguration of that
// name. Per configuration a GET each call, an update only when a webhook's
// caBundle differs (retried on a conflict). A missing configuration is
// Code::kNotFound naming it; the validating one is patched first.
class WebhookConfigCaBundlePatcher final : public CaBundlePatcher {
 public:
  WebhookConfigCaBundlePatcher(std::shared_ptr<kube::Client> client, std::string configName,
                               std::string mutatingConfigName = "")
      : client_(std::move(client)),
        configName_(std::move(configName)),
        mutatingConfigName_(std::move(mutatingConfigName)) {}
  StatusOr<bool> patchCaBundle(const std::string& caBundlePem) override;

 private:
  StatusOr<bool> patchOne(const kube::Resource& resource, const std::string& name,
                          const std::string& encoded);

  std::shared_ptr<kube::Client> client_;
  std::string configName_;
  std::string mutatingConfigName_;
};

}  // namespace lockstep::webhooks
