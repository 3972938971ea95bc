#include "webhooks/admission/serving_pod_rule.h"

#include <algorithm>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/serving_pod.h"
#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {
namespace {

namespace v1 = api::v1alpha1;
namespace ja = json_access;
using nlohmann::json;

std::string quote(const std::string& s) { return "\"" + s + "\""; }

const std::string* labelOf(const json* pod, const char* key) {
  return ja::str(ja::at(pod, {"metadata", "labels", key}));
}

bool hasLabel(const json* pod, const char* key) {
  const json* labels = ja::at(pod, {"metadata", "labels"});
  return labels != nullptr && labels->is_object() && labels->contains(key);
}

std::string podId(const ServingPodReview& r) {
  std::string name = ja::strOr(ja::at(r.pod, {"metadata", "name"}));
  if (name.empty()) name = ja::strOr(ja::at(r.pod, {"metadata", "generateName"})) + "*";
  return quote(r.ns + "/" + name);
}

Verdict refuse(const ServingPodReview& r, const std::string& model,
               const std::vector<std::string>& why) {
  Verdict v;
  v.checked = true;
  v.decision = Decision::kDenied;
  v.code = 403;
  v.reason = "Forbidden";
  v.violations = why;
  std::string joined;
  for (const std::string& s : why) joined += (joined.empty() ? "" : "; ") + s;
  const std::string service =
      model.empty() ? std::string("a model's Service") : "the Service " + quote(model);
  v.message = "lockstep: pod " + podId(r) + ": label " + std::string(v1::kServingLabel) +
              " is reserved for the serving pods Lockstep builds (" + service +
              " sends prod traffic to the pods carrying it): " + joined +
              "; remove the label from the pod";
  return v;
}

}  // namespace

bool servingLabelReviewed(const ServingPodReview& r) {
  if (r.pod == nullptr || !r.pod->is_object()) return false;
  if (r.operation == Operation::kCreate) return hasLabel(r.pod, v1::kServingLabel);
  if (r.operation != Operation::kUpdate || !hasLabel(r.pod, v1::kServingLabel)) return false;
  if (!hasLabel(r.oldPod, v1::kServingLabel)) return true;
  const json& now = r.pod->at("metadata").at("labels").at(v1::kServingLabel);
  const json& was = r.oldPod->at("metadata").at("labels").at(v1::kServingLabel);
  return now != was;
}

Verdict validateServingPod(const ServingPodReview& r) {
  if (!servingLabelReviewed(r)) return Verdict{};
  const std::string* modelLabel = labelOf(r.pod, v1::kModelLabel);
  const std::string model = modelLabel != nullptr ? *modelLabel : std::string();
  if (r.operation == Operation::kUpdate) {
    return refuse(r, model,
                  {"it cannot be added to or changed on a running pod (only the ReplicaSet "
                   "controller creates pods with it, from the template of a Deployment Lockstep "
                   "built)"});
  }
  std::vector<std::string> why;
  if (model.empty()) {
    why.push_back("the pod has no label " + std::string(v1::kModelLabel) + " naming its model");
  }
  const auto& ctl = r.replicaSetControllers;
  if (std::find(ctl.begin(), ctl.end(), r.user.username) == ctl.end()) {
    why.push_back("it was created by user " + quote(r.user.username) +
                  ", not by the ReplicaSet controller (" +
                  (ctl.empty() ? std::string("none configured") : quote(ctl.front())) + ")");
  }
  if (!model.empty()) {
    if (r.objects == nullptr) {
      why.emplace_back("the webhook has no view of the model's ReplicaSets and Deployments");
    } else {
      Status lookupError;
      const v1::NamespacedLookup lookup = [&](std::string_view kind,
                                              const std::string& name) -> kube::ObjectPtr {
        if (kind == "ConfigMap") return nullptr;  // the anchor: migration only, never labelled pods
        StatusOr<kube::ObjectPtr> got = r.objects->find(r.ns, kind, name);
        if (!got.isOk()) {
          if (lookupError.isOk())
            lookupError = got.status().withContext("reading " + std::string(kind) + " " + name);
          return nullptr;
        }
        return *got;
      };
      const v1::ServingOwner owner = v1::servingOwnerOf(*r.pod, model, lookup);
      if (!lookupError.isOk()) {
        Verdict v;
        v.decision = Decision::kError;
        v.checked = true;
        v.message = "lockstep: pod " + podId(r) + ": the owner chain of label " +
                    std::string(v1::kServingLabel) +
                    " cannot be checked: " + lookupError.toString();
        return v;
      }
      if (!owner.ok()) {
        why.push_back("its owner chain does not lead to the Deployment " + model + "-stable or " +
                      model + "-canary of Model " + quote(model) + ": " + owner.why);
      }
    }
  }
  if (why.empty()) {
    Verdict v;
    v.checked = true;
    return v;
  }
  return refuse(r, model, why);
}

}  // namespace lockstep::webhooks
