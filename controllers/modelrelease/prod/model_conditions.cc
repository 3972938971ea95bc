#include "controllers/modelrelease/prod/model_conditions.h"

#include <algorithm>
#include <optional>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/prod/model_record.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "controllers/modelrelease/runtime_pod.h"
#include "operator/kube/conditions.h"
#include "operator/kube/views.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

// The recorded release's serving replicas, from the stages the record keeps;
// nullopt when it keeps none (an earlier operator's record, or over the bound).
std::optional<int> recordedReplicas(const v1::Model& model) {
  auto object = recordedProdRelease(model);
  if (!object.isOk()) return std::nullopt;
  const v1::ModelRelease r = v1::decodeModelRelease(*object);
  const v1::Stage* stage = r.prodStage();
  if (stage == nullptr || !stage->serving) return std::nullopt;
  return static_cast<int>(stage->serving->replicas);
}

// Whether labels/annotations name the recorded release on its pair (a record
// without a pinned pair, adopted from an anchor, is matched by name alone).
bool onRecord(const kube::StringMapView& labels, const kube::StringMapView& annotations,
              const v1::ProdContent& prod) {
  if (labels.get(v1::kReleaseLabel) != prod.release) return false;
  if (!prod.runtime.closureHash.empty() &&
      annotations.get(v1::kClosureHashAnnotation) != prod.runtime.closureHash)
    return false;
  return prod.package.empty() || annotations.get(kPackageAnnotation) == prod.package;
}

// "gpt2-stable runs release gpt2-v1, the Model records gpt2-v2"; the first difference.
std::string templateDifference(const kube::DeploymentView& d, const v1::ProdContent& prod) {
  const std::string head = "Deployment " + std::string(d.meta.name) + " ";
  const std::string_view release = d.templateLabels.get(v1::kReleaseLabel);
  if (release != prod.release) {
    return head + (release.empty() ? "runs no release" : "runs release " + std::string(release)) +
           ", the Model records " + prod.release + " as prod";
  }
  const std::string_view hash = d.templateAnnotations.get(v1::kClosureHashAnnotation);
  if (!prod.runtime.closureHash.empty() && hash != prod.runtime.closureHash) {
    return head + "runs " + prod.release + " with closure hash " +
           (hash.empty() ? std::string("(none)") : std::string(hash)) + ", the Model pins " +
           prod.runtime.closureHash;
  }
  return head + "runs " + prod.release + " with package " +
         std::string(d.templateAnnotations.get(kPackageAnnotation)) + ", the Model records " +
         prod.package;
}

std::string pairOf(const v1::ProdContent& prod) {
  std::string out = "package " + prod.package;
  if (!prod.runtime.closureHash.empty()) out += ", closure hash " + prod.runtime.closureHash;
  if (prod.runtime.revision > 0)
    out +=
        " (" + prod.runtime.runtimeEnv + " revision " + std::to_string(prod.runtime.revision) + ")";
  return out;
}

}  // namespace

bool stableRollingOut(const kube::DeploymentView& d) {
  for (const kube::ConditionView& c : d.conditions) {
    // Stuck, not rolling: Degraded may say so.
    if (c.type == "Progressing" && c.reason == "ProgressDeadlineExceeded") return false;
  }
  return d.observedGeneration < d.meta.generation || d.updatedReplicas < d.replicas() ||
         d.statusReplicas > d.updatedReplicas;
}

ModelConditions planModelConditions(const ModelObserved& o, const std::string& now) {
  const v1::Model model = v1::decodeModel(*o.model);
  const std::string ns = model.meta.ns;
  const std::string name = model.meta.name;
  ModelConditions out;
  out.observedGeneration = model.meta.generation;
  kube::Condition ready{v1::kConditionReady, "False", "", ""};
  kube::Condition progressing{v1::kConditionProgressing, "False", kModelReasonStable,
                              "no canary holds the slot and the stable Deployment has rolled out"};

  const bool canary = model.status.canary.has_value();
  std::optional<kube::DeploymentView> stable;
  if (o.stableDeployment) stable = kube::viewDeployment(*o.stableDeployment);
  if (canary) {
    progressing = {v1::kConditionProgressing, "True", kModelReasonCanaryInFlight,
                   "release " + model.status.canary->release + " holds the canary slot since " +
                       model.status.canary->since};
  } else if (stable && stableRollingOut(*stable)) {
    progressing = {v1::kConditionProgressing, "True", kModelReasonStableRollingOut,
                   "Deployment " + std::string(stable->meta.name) + " is rolling out"};
  }

  // While a canary or a roll-out is in flight the messages carry no live
  // count: every Ready pod would otherwise be a write of the Model, beside the
  // release's own status writes (docs/benchmarks.md counts them).
  const bool inFlight = progressing.status == "True";
  if (!model.status.prod) {
    ready.reason = kModelReasonNoProd;
    ready.message = "no release of model " + name + " has been promoted yet (" +
                    (o.releases == 0 ? std::string("no ModelRelease names it")
                                     : std::to_string(o.releases) + " ModelRelease(s) name it") +
                    ")";
  } else {
    const v1::ProdContent& prod = *model.status.prod;
    const std::string stableName = servingDeploymentName(name, kTrackStable);
    if (model.spec.replicas) {
      out.want = static_cast<int>(*model.spec.replicas);
    } else if (auto n = recordedReplicas(model)) {
      out.want = *n;
    } else {
      out.want = stable ? static_cast<int>(stable->replicas()) : 1;
    }
    // A canary's share: what the plan left on stable.
    if (canary && stable) out.want = std::min(out.want, static_cast<int>(stable->replicas()));
    for (const kube::ObjectPtr& p : o.pods) {
      const kube::PodView pod = kube::viewPod(*p);
      const std::string_view track = pod.meta.labels.get(v1::kTrackLabel);
      if (!pod.ready || pod.terminating()) continue;
      if (track != kTrackStable && (canary || track != kTrackCanary)) continue;
      if (onRecord(pod.meta.labels, pod.meta.annotations, prod)) ++out.readyPods;
    }
    if (!stable) {
      ready.reason = kModelReasonStableMissing;
      ready.message = "Deployment " + ns + "/" + stableName + " does not exist";
    } else if (!onRecord(stable->templateLabels, stable->templateAnnotations, prod)) {
      ready.reason = kModelReasonStableNotOnProd;
      ready.message = templateDifference(*stable, prod);
    } else if (!o.service) {
      ready.reason = kModelReasonServiceMissing;
      ready.message = "Service " + ns + "/" + name + " does not exist";
    } else if (out.readyPods < out.want) {
      ready.reason = kModelReasonStableNotReady;
      ready.message = inFlight ? "pods of " + prod.release + " not all Ready on its pair yet (" +
                                     pairOf(prod) + "): " + progressing.message
                               : std::to_string(out.readyPods) + "/" + std::to_string(out.want) +
                                     " pods of " + prod.release + " Ready on its pair (" +
                                     pairOf(prod) + ")";
    } else {
      out.ready = true;
      ready = {v1::kConditionReady, "True", kModelReasonServing,
               (inFlight ? std::string()
                         : std::to_string(out.want) + "/" + std::to_string(out.want) + " ") +
                   "pods of " + prod.release + " Ready on its pair (" + pairOf(prod) + ")"};
    }
  }

  kube::Condition degraded{
      v1::kConditionDegraded, "False",
      model.status.prod ? kModelReasonAsRecorded : kModelReasonNoProd,
      model.status.prod ? "prod serves what the Model records" : "nothing is recorded as prod yet"};
  if (model.status.prod && !out.ready && progressing.status != "True")
    degraded = {v1::kConditionDegraded, "True", ready.reason, ready.message};

  json conditions = model.status.conditions.is_array() ? model.status.conditions : json::array();
  for (const kube::Condition* c : {&ready, &progressing, &degraded})
    kube::setCondition(conditions, *c, out.observedGeneration, now);
  out.changed = conditions != model.status.conditions ||
                model.status.observedGeneration != out.observedGeneration;
  out.conditions = std::move(conditions);
  return out;
}

std::optional<std::string> unresolvableRollback(
    const v1::Model& m,
    const std::function<std::optional<v1::ModelRelease>(const std::string&)>& releaseOfModel) {
  const std::optional<v1::ModelRollbackAsk> ask = v1::modelRollbackAsk(m, m.prodRevision());
  if (!ask) return std::nullopt;
  const std::string head = "rollback of model \"" + m.meta.name + "\" at prod revision " +
                           m.prodRevision() + " asked by " + ask->by + " ";
  const std::string current = m.promoted();
  if (current.empty()) return head + "refused: the model runs no promoted release";
  if (ask->to.empty()) {
    auto takes = [&](const std::string& name) {
      const std::optional<v1::ModelRelease> r = releaseOfModel(name);
      return r && v1::takesRollbackRequests(*r);
    };
    if (v1::previousProdRelease(m, takes).empty())
      return head +
             "refused: no release prod ran before the current one still exists (name one with "
             "rollback-to.lockstep.dev/" +
             m.prodRevision() + ")";
    return std::nullopt;
  }
  if (ask->to == current)
    return head + "refused: release \"" + ask->to + "\" is what prod runs already";
  const std::optional<v1::ModelRelease> target = releaseOfModel(ask->to);
  if (!target)
    return head + "refused: release \"" + ask->to + "\" (rollback-to.lockstep.dev/" +
           m.prodRevision() + ") is not a ModelRelease of this model in namespace " + m.meta.ns;
  if (!v1::takesRollbackRequests(*target))
    return head + "refused: release \"" + ask->to + "\" never ran in prod (phase " +
           (target->status.phase ? std::string(v1::phaseName(*target->status.phase))
                                 : std::string("Pending")) +
           "); only a release prod ran before can take prod back without its gates";
  return std::nullopt;
}

}  // namespace lockstep::controllers
