#include "webhooks/admission/handler.h"

#include <exception>
#include <functional>
#include <optional>

#include "webhooks/admission/admission_review.h"
#include "webhooks/admission/creator_patch.h"
#include "webhooks/admission/json_access.h"
#include "webhooks/admission/model_release_validator.h"
#include "webhooks/admission/pod_validator.h"
#include "webhooks/admission/serving_pod_rule.h"

namespace lockstep::webhooks {
namespace {

namespace ja = json_access;

std::string objectName(const AdmissionRequest& req) {
  if (!req.name.empty()) return req.name;
  std::string gen = ja::strOr(ja::at(&req.object, {"metadata", "generateName"}));
  return gen.empty() ? std::string() : gen + "*";
}

// The shared decode → validate → encode → record pipeline.
// `objectMask`: the object fields the validator reads (nullptr: all of them).
HttpReply serve(std::string_view webhook, std::string_view body, const FieldMask* objectMask,
                AdmissionRecorder& recorder, const kube::Clock& clock,
                const std::function<Verdict(const AdmissionRequest&)>& validate) {
  const auto start = clock.now();
  AdmissionOutcome outcome;
  outcome.webhook = std::string(webhook);
  HttpReply reply;
  try {
    StatusOr<AdmissionRequest> req = decodeAdmissionReview(body, objectMask);
    if (!req.isOk()) {
      outcome.decision = Decision::kError;
      outcome.message = req.status().message();
      reply = {400, "text/plain; charset=utf-8", req.status().message() + "\n"};
    } else {
      outcome.operation = req->operation;
      outcome.uid = req->uid;
      outcome.ns = req->ns;
      outcome.name = objectName(*req);
      outcome.userName = req->userName;
      outcome.dryRun = req->dryRun;
      Verdict v = validate(*req);
      outcome.decision = v.decision;
      outcome.checked = v.checked;
      outcome.message = v.message;
      outcome.warnings = v.warnings;
      if (v.decision == Decision::kError) {
        // Not decidable now (an input could not be read): the API server applies failurePolicy.
        reply = {500, "text/plain; charset=utf-8", v.message + "\n"};
      } else {
        reply.body = encodeAdmissionReview(responseFromVerdict(req->uid, v));
      }
    }
  } catch (const std::exception& e) {
    // A bug, not bad input: answer 500 so the API server applies failurePolicy.
    outcome.decision = Decision::kError;
    outcome.message = std::string("internal error: ") + e.what();
    reply = {500, "text/plain; charset=utf-8", "internal error\n"};
  }
  outcome.duration = clock.now() - start;
  recorder.record(outcome);
  return reply;
}

}  // namespace

Status PodWebhook::trustInitImage(const std::string& image) {
  if (!image.empty()) {
    if (Status s = checkTrustedInitImage(image); !s.isOk()) return s;
  }
  trustedInitImage_ = image;
  return Status::ok();
}

HttpReply PodWebhook::handle(std::string_view body) {
  return serve(name(), body, &podFieldMask(), recorder_, clock_,
               [this](const AdmissionRequest& req) {
                 PodReview review;
                 review.operation = req.operation;
                 review.ns = req.ns;
                 review.pod = &req.object;
                 review.oldPod = req.oldObject.is_null() ? nullptr : &req.oldObject;
                 review.trustedInitImage = trustedInitImage_;
                 // The serving label first: it holds in every namespace mode.
                 ServingPodReview serving;
                 serving.operation = req.operation;
                 serving.ns = req.ns;
                 serving.pod = &req.object;
                 serving.oldPod = review.oldPod;
                 serving.user = req.user;
                 serving.objects = servingObjects_;
                 if (Verdict s = validateServingPod(serving); !s.allowed()) return s;
                 StatusOr<NamespaceMode> mode = namespaces_.modeOf(req.ns);
                 if (!mode.isOk()) {
                   Verdict unknown;
                   unknown.decision = Decision::kError;
                   unknown.message = "lockstep: admission mode of namespace \"" + req.ns +
                                     "\" unknown: " + mode.status().toString();
                   return unknown;
                 }
                 review.mode = *mode;
                 if (review.mode != NamespaceMode::kOff) {
                   if (auto env = podRuntimeEnvName(req.object); env && !env->empty()) {
                     review.runtimeEnv = envs_.find(req.ns, *env);
                   }
                 }
                 return validatePod(review);
               });
}

HttpReply ModelReleaseWebhook::handle(std::string_view body) {
  return serve(name(), body, nullptr, recorder_, clock_, [this](const AdmissionRequest& req) {
    ModelReleaseReview review;
    review.operation = req.operation;
    review.ns = req.ns;
    review.name = req.name;
    review.subResource = req.subResource;
    review.release = &req.object;
    review.oldRelease = req.oldObject.is_null() ? nullptr : &req.oldObject;
    review.user = req.user;
    review.allowPrometheusAddress = allowPrometheusAddress_;
    review.approvalRules = approvalRules_;
    review.providers = providers_;
    if (namespaceLabels_ != nullptr) {
      auto labels = namespaceLabels_->labelsOf(req.ns);
      if (labels.isOk()) review.namespaceLabels = std::move(*labels);
    }
    if (prods_ != nullptr) {
      const std::string* model = json_access::str(json_access::at(&req.object, {"spec", "model"}));
      if (model != nullptr && !model->empty()) review.prod = prods_->prodOf(req.ns, *model);
    }
    if (auto env = modelReleaseRuntimeEnvName(req.object))
      review.runtimeEnv = envs_.find(req.ns, *env);
    for (const std::string& verb : verbsToAuthorize(review))
      review.access.emplace(verb, authorizer_.authorize(accessRequestFor(review, verb)));
    if (auto q = secretAccessRequestFor(review)) review.secretAccess = authorizer_.authorize(*q);
    return validateModelRelease(review);
  });
}

HttpReply ModelReleaseCreatorWebhook::handle(std::string_view body) {
  // The mask keeps what the patch depends on (whether metadata and its
  // annotations exist, the creator annotation) and generateName for the log.
  static const FieldMask mask = {{"metadata", {{"annotations", true}, {"generateName", true}}}};
  return serve(name(), body, &mask, recorder_, clock_, [](const AdmissionRequest& req) {
    Verdict v;
    StatusOr<nlohmann::json> patch = creatorPatch(req);
    if (!patch.isOk()) {
      v.decision = Decision::kDenied;
      v.code = 400;
      v.reason = "BadRequest";
      v.message = "lockstep: " + patch.status().message();
      v.violations = {patch.status().message()};
      return v;
    }
    const bool created = !patch->empty();
    nlohmann::json groups = approverGroupsPatch(req);
    for (nlohmann::json& op : groups) patch->push_back(std::move(op));
    v.checked = req.operation == Operation::kCreate || !groups.empty();
    if (!patch->empty()) {
      v.patch = patch->dump();
      // For the log: what was recorded (a user name, never object content).
      v.message = created ? "recorded the creator " + req.user.username : "";
      if (!groups.empty())
        v.message += (v.message.empty() ? "" : "; ") + std::string("recorded the groups of ") +
                     req.user.username;
    }
    return v;
  });
}

}  // namespace lockstep::webhooks
