// Admission webhooks as request-body → response functions: decode the
// AdmissionReview, look up what the validator needs (from caller-provided,
// cache-backed lookups; no network), validate, encode, record.
// Independent of any HTTP library: the server adapter maps HttpReply to HTTP.
// Thread-safety: handle() may be called concurrently if the lookups and the
// recorder are thread-safe (their contract).
#pragma once

#include <string>
#include <string_view>

#include "api/v1alpha1/approval.h"
#include "common/status.h"
#include "operator/kube/clock.h"
#include "webhooks/admission/authorizer.h"
#include "webhooks/admission/recorder.h"
#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

inline constexpr std::string_view kPodWebhookPath = "/validate/pods";
inline constexpr std::string_view kModelReleaseWebhookPath = "/validate/modelreleases";
inline constexpr std::string_view kModelReleaseMutatingWebhookPath = "/mutate/modelreleases";

// An HTTP answer without an HTTP library.
struct HttpReply {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
};

class AdmissionWebhook {
 public:
  virtual ~AdmissionWebhook() = default;
  // Metric label and log name: "pods" | "modelreleases" | "modelreleases-creator".
  virtual std::string_view name() const = 0;
  // URL path the API server posts to.
  virtual std::string_view path() const = 0;
  // 200 + AdmissionReview for every decodable review (denials included);
  // 400 + text for an empty/non-JSON/non-AdmissionReview body; never throws.
  virtual HttpReply handle(std::string_view body) = 0;
};

class PodWebhook final : public AdmissionWebhook {
 public:
  PodWebhook(const RuntimeEnvLookup& envs, const NamespaceModeLookup& namespaces,
             AdmissionRecorder& recorder, const kube::Clock& clock)
      : envs_(envs), namespaces_(namespaces), recorder_(recorder), clock_(clock) {}
  std::string_view name() const override { return "pods"; }
  std::string_view path() const override { return kPodWebhookPath; }
  HttpReply handle(std::string_view body) override;
  // The operator's --cli-image: init containers on exactly this reference (the
  // verification containers) are admitted (pod_validator.h). Refused unless
  // pinned by digest (checkTrustedInitImage); "" trusts none.
  Status trustInitImage(const std::string& image);
  // The objects of serving pods' owner chains (serving_pod_rule.h); unset: a
  // pod carrying the serving label is refused. Must outlive the webhook.
  void setServingObjects(const ServingObjectLookup* objects) { servingObjects_ = objects; }

 private:
  std::string trustedInitImage_;
  const ServingObjectLookup* servingObjects_ = nullptr;
  const RuntimeEnvLookup& envs_;
  const NamespaceModeLookup& namespaces_;
  AdmissionRecorder& recorder_;
  const kube::Clock& clock_;
};

// ModelReleases. Unlike the pod webhook this one may call out: a write that
// approves or aborts asks `authorizer` (a SubjectAccessReview, at most one per
// verb), so its latency is bounded by the authorizer's deadline.
class ModelReleaseWebhook final : public AdmissionWebhook {
 public:
  ModelReleaseWebhook(const RuntimeEnvLookup& envs, const Authorizer& authorizer,
                      AdmissionRecorder& recorder, const kube::Clock& clock)
      : envs_(envs), authorizer_(authorizer), recorder_(recorder), clock_(clock) {}
  std::string_view name() const override { return "modelreleases"; }
  std::string_view path() const override { return kModelReleaseWebhookPath; }
  HttpReply handle(std::string_view body) override;
  // --allow-release-prometheus-address: releases may give analysis addresses.
  void allowPrometheusAddress(bool allow) { allowPrometheusAddress_ = allow; }
  // The platform's approval rules (--allow-service-account-approvers).
  void setApprovalRules(const api::v1alpha1::ApprovalRules& rules) { approvalRules_ = rules; }
  // Models' prods (the Service port rule) and AnalysisProviders (a warning for
  // an unknown one); unset: those checks are skipped. Must outlive the webhook.
  void setModelProds(const ModelProdLookup* prods) { prods_ = prods; }
  void setAnalysisProviders(const AnalysisProviderLookup* providers) { providers_ = providers; }
  // Namespaces' labels (an AnalysisProvider's spec.namespaceSelector); unset:
  // that rule is left to the controller. Must outlive the webhook.
  void setNamespaceLabels(const NamespaceLabelLookup* labels) { namespaceLabels_ = labels; }

 private:
  const NamespaceLabelLookup* namespaceLabels_ = nullptr;
  bool allowPrometheusAddress_ = false;
  api::v1alpha1::ApprovalRules approvalRules_;
  const ModelProdLookup* prods_ = nullptr;
  const AnalysisProviderLookup* providers_ = nullptr;
  const RuntimeEnvLookup& envs_;
  const Authorizer& authorizer_;
  AdmissionRecorder& recorder_;
  const kube::Clock& clock_;
};

// The ModelRelease mutating webhook: on CREATE, records the requesting user
// as the release's creator, and on CREATE or UPDATE the groups of the user
// who approves (creator_patch.h), with a JSON Patch; everything else is
// allowed unchanged. Bad input (no object, a malformed metadata, no
// user name) is refused with 400 BadRequest naming the field. No lookups, no
// calls out.
class ModelReleaseCreatorWebhook final : public AdmissionWebhook {
 public:
  ModelReleaseCreatorWebhook(AdmissionRecorder& recorder, const kube::Clock& clock)
      : recorder_(recorder), clock_(clock) {}
  std::string_view name() const override { return "modelreleases-creator"; }
  std::string_view path() const override { return kModelReleaseMutatingWebhookPath; }
  HttpReply handle(std::string_view body) override;

 private:
  AdmissionRecorder& recorder_;
  const kube::Clock& clock_;
};

}  // namespace lockstep::webhooks
