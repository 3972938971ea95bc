#include "controllers/modelrelease/prod/prod_plan.h"

#include <set>
#include <utility>

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_env.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/fold.h"
#include "controllers/modelrelease/prod/model_record.h"
#include "controllers/modelrelease/prod/ownership.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "operator/kube/conditions.h"
#include "operator/kube/event_sink.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

using v1::kReasonServingApplyFailed;
// How often a release stalled on a NameConflict looks again (the object in
// the way may carry no label the operator watches).
constexpr int64_t kNameConflictRecheckSeconds = 10;

// The serving recipe of `r`: its package, the serving template of its prod
// stage and its pinned runtime pair (status.runtime; a release from before
// pins: the revision the pin rule names, v1::runtimeOf), never the
// RuntimeEnv's current spec. A RuntimeEnv from before revisions: its image.
StatusOr<ServingRelease> servingReleaseOf(const v1::ModelRelease& r, const ProdObserved& p) {
  ServingRelease out;
  out.release = r.meta.name;
  out.package = r.spec.package;
  out.closureHash = r.spec.closureHash;
  out.runtimeEnv = r.spec.runtimeEnvName;
  if (const v1::Stage* stage = r.prodStage()) out.podTemplate = stage->serving->podTemplate;
  auto rte = p.runtimeEnvs.find(out.runtimeEnv);
  if (rte == p.runtimeEnvs.end() || !rte->second) {
    return Status(Code::kUnavailable, "RuntimeEnv " + out.runtimeEnv + " of release " +
                                          out.release + " does not exist");
  }
  const v1::RuntimeEnv env = v1::decodeRuntimeEnv(*rte->second);
  if (auto pair = v1::runtimeOf(r.status.runtime, env.status.revisions, env.status.currentRevision,
                                r.spec.closureHash, r.spec.runtimeImage)) {
    out.runtimeImage = pair->image;
    out.closureHash = pair->closureHash;
    out.runtimeRevision = v1::recordedRevision(env.status.revisions, *pair);
  } else {
    out.runtimeImage = env.spec.image;
  }
  // spec.verify.onStart: the checks against this release's pinned revision.
  auto verify =
      onStartVerification(*rte->second, out.runtimeImage, out.runtimeRevision, p.cliImage);
  if (!verify.isOk()) return verify.status();
  out.verify = std::move(*verify);
  return out;
}

// The serving recipe of `who`, whose object is gone: when the Model records
// it as prod, rebuilt from the record (model_record.h recordedProdRelease),
// exactly as from the object; else kUnavailable, the track keeps its pods. A
// record whose stages are not its content digest's: kInvalid,
// never followed.
StatusOr<ServingRelease> servingReleaseOfGone(const std::string& who, const std::string& track,
                                              const ProdObserved& p) {
  const std::string gone =
      "release " + who + " is gone; the " + track + " Deployment keeps its pods";
  if (!p.model) return Status(Code::kUnavailable, gone);
  const v1::Model model = v1::decodeModel(*p.model);
  if (model.promoted() != who) return Status(Code::kUnavailable, gone);
  auto object = recordedProdRelease(model);
  if (!object.isOk()) {
    if (object.status().code() == Code::kNotFound && model.status.prod->stagesNotRecorded.empty())
      return Status(Code::kUnavailable, gone);
    return Status(
        object.status().code() == Code::kNotFound ? Code::kUnavailable : object.status().code(),
        gone + " (" + object.status().message() + ")");
  }
  return servingReleaseOf(v1::decodeModelRelease(*object), p);
}

// The write of a serving object Lockstep builds (docs/rollouts.md "No write
// over a newcomer"): a create when nothing stood at the name when it was read
// (AlreadyExists: someone took the name meanwhile, plan again and look), else
// a server-side apply guarded by the uid that was read (the server refuses it
// when the object was replaced meanwhile).
PlannedApply ownedWrite(const kube::Resource& resource, json object, const kube::Object* current,
                        const std::string& what) {
  if (current == nullptr) {
    PlannedApply a = plannedCreate(resource, std::move(object), "creating " + what);
    a.alreadyExistsIsConflict = true;
    return a;
  }
  PlannedApply a = plannedApply(resource, std::move(object), "applying " + what);
  a.uid = v1::decodeMeta(*current).uid;
  return a;
}

// The Deployment `<model>-<track>` built from release `who`'s serving
// template with `replicas` (a release gone that the Model records as prod:
// from the Model's record, servingReleaseOfGone).
StatusOr<json> buildTrack(const ServingObjectsInput& in, const v1::ModelRelease& self,
                          const std::string& track, const std::string& who, int replicas,
                          const ProdObserved& p) {
  StatusOr<ServingRelease> sr = Status(Code::kUnavailable, "");
  if (who == self.meta.name) {
    sr = servingReleaseOf(self, p);
  } else if (auto other = p.releases.find(who); other != p.releases.end() && other->second) {
    sr = servingReleaseOf(v1::decodeModelRelease(*other->second), p);
  } else {
    sr = servingReleaseOfGone(who, track, p);
  }
  if (!sr.isOk()) return sr.status();
  return buildServingDeployment(in, track, *sr, replicas);
}

// The write that puts the model's `track` Deployment on release `who` (empty:
// scaled to zero) with `replicas`: a scale when it already runs `who` as
// Lockstep builds it, else a server-side apply built from that release's
// serving template; nullopt when nothing changes. A Deployment that carries
// `who` but whose template drifted (serving_objects.h deploymentDrift: an
// edited env var, package volume, image, ...) is applied again, and
// `restored` (when given) says what drifted, for a ProdRestored Event; when
// `who` cannot be built now (its RuntimeEnv gone, a displaced release) that
// Deployment is only scaled, as before. A release gone that the Model records
// as prod is built from the Model's record (servingReleaseOfGone).
// kInvalidArgument: the template cannot run; kUnavailable: the release (with
// nothing recorded to rebuild it from) or its RuntimeEnv is gone; kInvalid:
// the record is not prod's content.
StatusOr<std::optional<PlannedApply>> placeTrack(
    const ServingObjectsInput& in, const v1::ModelRelease& self, const kube::ObjectPtr& selfObject,
    const std::string& track, const std::string& who, int replicas, const kube::Object* current,
    const ProdObserved& p, std::string* restored = nullptr) {
  const std::string name = servingDeploymentName(in.model, track);
  std::optional<PlannedApply> out;
  std::optional<json> reapply;
  if (!who.empty() && current != nullptr && templateRelease(current) == who) {
    if (auto built = buildTrack(in, self, track, who, replicas, p); built.isOk()) {
      json scaled = *built;
      scaled["spec"]["replicas"] = specReplicas(current);
      if (std::string drift = deploymentDrift(scaled, *current, in.fetchCommand); !drift.empty()) {
        if (restored != nullptr) *restored = drift;
        reapply = std::move(*built);
      }
    }
  }
  if (!reapply && (who.empty() || (current != nullptr && templateRelease(current) == who))) {
    const int want = who.empty() ? 0 : replicas;
    if (current == nullptr || specReplicas(current) == want) return out;
    out = plannedMergePatch(v1::kDeployments, in.ns, name, json{{"spec", {{"replicas", want}}}},
                            "scaling Deployment " + name + " to " + std::to_string(want));
    out->uid = v1::decodeMeta(*current).uid;
  } else {
    if (!reapply) {
      auto built = buildTrack(in, self, track, who, replicas, p);
      if (!built.isOk()) return built.status();
      reapply = std::move(*built);
    }
    out = ownedWrite(v1::kDeployments, std::move(*reapply), current,
                     "Deployment " + name + " (release " + who + ")");
  }
  out->failureEventOn = selfObject;
  out->failureEventReason = kReasonServingApplyFailed;
  return out;
}

ServingObjectsInput servingInput(const v1::ModelRelease& r, const v1::CanarySpec& spec,
                                 const ProdObserved& p) {
  ServingObjectsInput in;
  in.model = r.spec.model;
  in.ns = r.meta.ns;
  in.port = spec.port;
  in.capacity = spec.capacity;
  in.mount = p.mount;
  in.fetchCommand = p.fetchCommand;
  in.modelUid = p.model ? v1::decodeMeta(*p.model).uid : std::string();
  if (p.model) in.serviceType = v1::decodeModel(*p.model).spec.serviceType;
  in.selectServingLabel = servingLabelSelectable(in.model, p);
  return in;
}

// The port the model's prod serves on: the Model's spec.port, else its
// Service's, else (no Service) the serving port of the release the Model
// records as prod; nullopt when none is known.
std::optional<int64_t> prodPort(const v1::Model& model, const ProdObserved& p) {
  if (model.spec.port) return *model.spec.port;
  if (p.service) {
    const json& ports = v1::decode::array(v1::decode::object(*p.service, "spec"), "ports");
    if (!ports.empty()) return v1::decode::integer(ports.front(), "port", 0);
  }
  auto promoted = p.releases.find(model.promoted());
  if (promoted == p.releases.end() || !promoted->second) return std::nullopt;
  const v1::ModelRelease pr = v1::decodeModelRelease(*promoted->second);
  if (const v1::Stage* stage = pr.prodStage()) {
    if (auto spec = canarySpecOf(*stage); spec.isOk()) return spec->port;
  }
  return std::nullopt;
}

// What belongs to the model overrides the release (api/v1alpha1/model.h):
// prod's N and the GPU strategy, when the Model's spec sets them.
void applyModelSpec(v1::CanarySpec& spec, const v1::Model& model) {
  if (model.spec.replicas) spec.replicas = static_cast<int>(*model.spec.replicas);
  if (model.spec.capacity == "surge") spec.capacity = v1::CapacityMode::kSurge;
  if (model.spec.capacity == "drain") spec.capacity = v1::CapacityMode::kDrain;
}

}  // namespace

std::optional<std::string> promotedMismatch(const v1::ModelRelease& r, const v1::Model& model,
                                            const ProdObserved& p) {
  const std::string promoted = model.promoted();
  if (promoted.empty() || promoted == r.meta.name) return std::nullopt;
  const v1::ProdContent& rec = *model.status.prod;
  std::string why;
  auto named = p.releases.find(promoted);
  if (named == p.releases.end() || !named->second) {
    // A Promoted release may be deleted (prod keeps its pods): then stable
    // must be running it already, or this release, holding the Model's canary
    // slot by its uid, is taking stable over (the handover: the Model still
    // records the release before it until this one is Promoted).
    // Or the Model's record rebuilds it (status.prod.stages, the recorded
    // content): stable is put back on it from there (placeTrack).
    const std::string onStable = templateRelease(p.stableDeployment.get());
    if (onStable == promoted) return std::nullopt;
    const bool handover = onStable == r.meta.name && model.status.canary &&
                          model.status.canary->release == r.meta.name &&
                          model.status.canary->uid == r.meta.uid;
    if (handover) return std::nullopt;
    auto rebuilt = recordedProdRelease(model);
    if (rebuilt.isOk()) return std::nullopt;
    why = "no such release exists and the stable Deployment does not run it";
    if (rebuilt.status().code() == Code::kInvalid) why += " (" + rebuilt.status().message() + ")";
  } else {
    const v1::ModelRelease known = v1::decodeModelRelease(*named->second);
    const v1::CanaryStatusRead& knownCanary = known.status.canary;
    const std::string canaryPhase =
        knownCanary.get() != nullptr ? knownCanary.get()->phase.value_or("") : "";
    const bool reachedProd = canaryPhase == v1::kPhasePromoted ||
                             canaryPhase == v1::kReasonPromoting ||
                             (known.status.phase && *known.status.phase == v1::Phase::kPromoted);
    if (known.spec.model != r.spec.model) {
      why = "that release is of model " + known.spec.model;
    } else if (!reachedProd) {
      why = "that release never reached prod (its status shows no promotion" +
            std::string(canaryPhase.empty() ? "" : "; canary phase " + canaryPhase) +
            (knownCanary.error.empty()
                 ? std::string()
                 : "; status.canary cannot be read (" + knownCanary.error + ")") +
            ")";
    } else if (!rec.package.empty() && rec.package != known.spec.package) {
      why =
          "the Model records package " + rec.package + " but that release is " + known.spec.package;
    } else if (!rec.runtime.closureHash.empty() &&
               rec.runtime.closureHash != known.spec.closureHash) {
      why = "the Model records closure " + rec.runtime.closureHash + " but that release pins " +
            known.spec.closureHash;
    }
  }
  if (why.empty()) return std::nullopt;
  return "Model " + r.meta.ns + "/" + r.spec.model + " says prod runs release " + promoted +
         ", but " + why +
         ": the record does not match the release it names, so stable never runs it and "
         "nothing in prod moved. Check the Model's status.history (lockstep model history " +
         r.spec.model + ") or take the model out of prod (lockstep model delete " + r.spec.model +
         ")";
}

std::optional<std::string> servicePortConflict(const v1::ModelRelease& r,
                                               const v1::CanarySpec& spec, const v1::Model& model,
                                               const ProdObserved& p) {
  // The Model's port binds every release; without one, prod's port binds the
  // releases other than the one prod runs.
  const std::string promoted = model.promoted();
  if (!model.spec.port && (promoted.empty() || promoted == r.meta.name)) return std::nullopt;
  const std::optional<int64_t> port = prodPort(model, p);
  if (!port || *port == spec.port) return std::nullopt;
  const v1::Stage* stage = r.prodStage();
  const auto at = stage != nullptr ? stage - r.spec.stages.data() : 0;
  const std::string field = "spec.stages[" + std::to_string(at) + "].serving.port";
  const std::string have = std::to_string(*port);
  const std::string where =
      model.spec.port
          ? "the port of Model " + r.meta.ns + "/" + r.spec.model + " (spec.port)"
          : "port " + have + " of Service " + r.meta.ns + "/" + r.spec.model +
                ", on which release " + promoted + " runs model " + r.spec.model + "'s prod";
  return "serving port " + std::to_string(spec.port) + " (" + field + ") differs from " +
         (model.spec.port ? where + ", " + have : where) +
         ": the Service port belongs to the model, and this release would re-point the "
         "Service of its stable pods. Nothing in prod moved. Create a release with port " +
         have + ", or retire the model first (lockstep model delete " + r.spec.model +
         ") to serve it on another port";
}

RecordedRelease recordedOf(const v1::ModelRelease& r, const kube::Object& object,
                           const ProdObserved& p) {
  RecordedRelease out;
  out.name = r.meta.name;
  out.uid = r.meta.uid;
  out.package = r.spec.package;
  out.runtime.runtimeEnv = r.spec.runtimeEnvName;
  out.runtime.closureHash = r.spec.closureHash;
  v1::RuntimePin pin;
  if (r.status.runtime) {
    pin = *r.status.runtime;
  } else if (auto env = p.runtimeEnvs.find(r.spec.runtimeEnvName);
             env != p.runtimeEnvs.end() && env->second) {
    const v1::RuntimeEnv e = v1::decodeRuntimeEnv(*env->second);
    if (auto pair = v1::runtimeOf(std::nullopt, e.status.revisions, e.status.currentRevision,
                                  r.spec.closureHash, r.spec.runtimeImage))
      pin = *pair;
  }
  if (!pin.closureHash.empty()) out.runtime.closureHash = pin.closureHash;
  out.runtime.image = pin.image;
  out.runtime.revision = pin.revision;
  out.contentDigest = v1::contentDigest(v1::releaseContent(object, pin));
  out.stages = v1::decode::array(v1::decode::object(object, "spec"), "stages");
  return out;
}

namespace {

void stopWith(ProdPlan& out, const Status& s) {
  out.events.push_back({kube::kEventTypeWarning, kReasonServingApplyFailed, s.message()});
  out.stop = true;
  out.stopError = s;
}

}  // namespace

ProdPlan planProd(const ReleaseObserved& o, const v1::ModelRelease& r,
                  const kube::ObjectPtr& releaseObject, const ProdObserved& p, ReleasePlan& plan) {
  ProdPlan out;
  const json& prevStatus = v1::decode::object(o.release, "status");
  const int64_t generation = r.meta.generation;
  const std::string& name = r.meta.name;
  auto spec = canarySpecOf(r.spec.stages.at(plan.prod->index));
  if (!spec.isOk()) {
    failProdStage(plan, spec.status().message(), prevStatus, generation, o.now);
    return out;
  }

  // Every object at the model's prod names must be Lockstep's before
  // anything in prod is written (ownership.h).
  if (!p.lookupError.isOk()) {
    stopWith(out, p.lookupError);
    return out;
  }
  // A status.canary the decoder refuses is never acted on (canary_status.h).
  const v1::CanaryStatusRead& started = r.status.canary;
  if (!started.error.empty()) {
    stallProdStage(plan, v1::kReasonCanaryStatusUnreadable,
                   "status.canary cannot be read (" + started.error +
                       "): the canary plans nothing from it and nothing in prod moved; it goes on "
                       "once the status is repaired",
                   prevStatus, generation, o.now, kNameConflictRecheckSeconds);
    return out;
  }
  const std::string startedModelUid =
      started.get() != nullptr ? started.get()->modelUid.value_or("") : "";
  if (auto conflict = findNameConflict(r.spec.model, p, startedModelUid)) {
    stallProdStage(plan, v1::kReasonNameConflict, conflict->message(r.meta.ns, r.spec.model),
                   prevStatus, generation, o.now, kNameConflictRecheckSeconds);
    return out;
  }

  // The Model: create it (defaults) when the model has none, or claim the
  // canary slot (the newest release to reach prod takes it; the one it
  // displaces turns Superseded). Then plan again from the cache.
  if (!p.model) {
    out.writes.push_back(createModel(r.meta.ns, r.spec.model));
    out.stop = true;
    out.stopRequeueSeconds = 1;
    return out;
  }
  const v1::Model model = v1::decodeModel(*p.model);
  applyModelSpec(*spec, model);
  // A release is known by its content: under the name prod's content was
  // recorded under, another content never takes prod (it would count prod's
  // own pods as its own).
  if (prodIdentity(model, o.release) == ProdIdentity::kOtherContent) {
    const v1::ProdContent& rec = *model.status.prod;
    stallProdStage(
        plan, v1::kReasonContentMismatch,
        "Model " + r.meta.ns + "/" + r.spec.model + " records that prod runs content " +
            rec.contentDigest + " under the name " + name + " (release object uid " + rec.uid +
            "), but this object (uid " + r.meta.uid +
            ") has other content (package, runtime pair or stages): a release with other "
            "content never takes prod under the name of the content prod runs, and nothing in "
            "prod moved. Create it under a new name; prod keeps running its recorded content",
        prevStatus, generation, o.now, kNameConflictRecheckSeconds);
    return out;
  }
  // The release the Model says prod runs must be one that got there.
  if (auto mismatch = promotedMismatch(r, model, p)) {
    stallProdStage(plan, v1::kReasonAnchorMismatch, *mismatch, prevStatus, generation, o.now,
                   kNameConflictRecheckSeconds);
    return out;
  }
  // The Service port belongs to the model: never re-pointed under the stable
  // pods of another release (found before this release claims the slot).
  if (auto conflict = servicePortConflict(r, *spec, model, p)) {
    stallProdStage(plan, v1::kReasonServicePortConflict, *conflict, prevStatus, generation, o.now,
                   kNameConflictRecheckSeconds);
    return out;
  }
  if (model.canaryHolder() != name && !started.written) {
    // The prod revision goes on past every rollback request a release of the
    // model carries: a re-created Model never makes an old request fire again.
    out.writes.push_back(
        claimCanary(*p.model, recordedOf(r, o.release, p), o.now, p.highestRollbackRevision));
    out.stop = true;
    out.stopRequeueSeconds = 1;
    return out;
  }

  // The pin this plan writes when the canary starts is the one its pods run on.
  v1::ModelRelease self = r;
  if (!self.status.runtime)
    self.status.runtime = v1::decodeRuntimePin(json{{"status", plan.status}});

  CanaryObserved co = observeCanary(r, *spec, p, o.now, o.nowUnix);
  if (!co.admissionRefusals.empty()) {
    // A refusal of a template that is not the release's (a hand edit that
    // placeTrack puts back below) is not the release's verdict: observed
    // again without the tracks whose template drifted.
    const ServingObjectsInput built = servingInput(r, *spec, p);
    std::set<std::string> edited;
    for (const auto& [track, dep] : {std::pair{kTrackCanary, p.canaryDeployment.get()},
                                     std::pair{kTrackStable, p.stableDeployment.get()}}) {
      if (dep == nullptr || templateRelease(dep) != name) continue;
      auto want = buildTrack(built, self, track, name, specReplicas(dep), p);
      if (!want.isOk()) continue;
      (*want)["spec"]["replicas"] = specReplicas(dep);
      if (!deploymentDrift(*want, *dep, built.fetchCommand).empty()) edited.insert(track);
    }
    if (!edited.empty()) co = observeCanary(r, *spec, p, o.now, o.nowUnix, edited);
  }
  co.window = o.window;
  // The Model this canary runs under (a re-created one is a NameConflict).
  co.modelUid = model.meta.uid;
  CanaryPlan cp = planCanary(co);
  // What the new status records, typed (the planner's own encoding).
  const v1::CanaryStatus next = v1::readCanaryStatus(cp.status).status.value_or(v1::CanaryStatus{});
  if (cp.measureNow && !p.measurement) {
    const int at = static_cast<int>(next.step.value_or(0));
    if (at >= 0 && at < static_cast<int>(spec->steps.size()) &&
        spec->steps[static_cast<size_t>(at)].analysis) {
      out.measure = spec->steps[static_cast<size_t>(at)].analysis;
      out.measureStep = at;
      const AnalysisCounters c = countersFrom(next.analysis.value_or(v1::CanaryAnalysisStatus{}));
      out.measureIndex = c.count + c.errors;
    }
  }

  // The Model records promotions and rollbacks (and frees the canary slot)
  // first: the guarded write (its resourceVersion) precedes every change of
  // the serving objects, so a plan from a stale cache moves nothing.
  // (Put in front of the writes once every one of them could be planned.)
  std::optional<PlannedApply> record;
  if (cp.action == CanaryAction::kPromoted || cp.action == CanaryAction::kRolledBack) {
    CanaryEndRecord rec;
    rec.release = recordedOf(self, o.release, p);
    rec.now = o.now;
    rec.promoted = cp.action == CanaryAction::kPromoted;
    rec.rollbackReason = next.reason.value_or("");
    rec.stable = co.knownGood ? co.knownGood->release : std::string();
    record = recordCanaryEnd(*p.model, rec);
  }

  // The Service, then both Deployments (the track that grows first; a failed
  // write stops before the other one). A Service that already holds what would be
  // applied is not written again: it was one PATCH per reconcile of every release
  // in prod, a third of the operator's requests (bench/promotion.py's audit log).
  const ServingObjectsInput in = servingInput(r, *spec, p);
  json wantService = buildModelService(in);
  if (!p.service || !serviceHolds(wantService, *p.service)) {
    PlannedApply service = ownedWrite(v1::kServices, std::move(wantService), p.service.get(),
                                      "Service " + r.spec.model);
    service.failureEventOn = releaseObject;
    service.failureEventReason = kReasonServingApplyFailed;
    out.writes.push_back(std::move(service));
  }
  const kube::Object* canaryDep = p.canaryDeployment.get();
  const kube::Object* stableDep = p.stableDeployment.get();
  const std::string canaryWho = !cp.canaryRelease.empty() ? cp.canaryRelease
                                : cp.replicas.canary > 0 || templateRelease(canaryDep) == name
                                    ? name
                                    : std::string();
  const bool stableFirst = cp.replicas.stable >= co.stable.specReplicas;
  std::vector<ReleaseEvent> restoredEvents;
  for (bool stableTurn : {stableFirst, !stableFirst}) {
    std::string drift;
    const std::string& who = stableTurn ? cp.stableRelease : canaryWho;
    auto w = stableTurn ? placeTrack(in, self, releaseObject, kTrackStable, who, cp.replicas.stable,
                                     stableDep, p, &drift)
                        : placeTrack(in, self, releaseObject, kTrackCanary, who, cp.replicas.canary,
                                     canaryDep, p, &drift);
    if (!w.isOk() && w.status().code() == Code::kInvalidArgument) {
      failProdStage(plan, w.status().message(), prevStatus, generation, o.now);
      return out;
    }
    if (!w.isOk()) {
      stopWith(out, w.status());
      return out;
    }
    if (*w) out.writes.push_back(std::move(**w));
    // A track's template edited during the canary: put back from the
    // release that owns the track (docs/rollouts.md "Prod heals").
    if (!drift.empty()) {
      restoredEvents.push_back(
          {kube::kEventTypeWarning, kReasonProdRestored,
           "Deployment " +
               servingDeploymentName(r.spec.model, stableTurn ? kTrackStable : kTrackCanary) + " " +
               drift + ": restored to release " + who + "'s serving objects (release " + name +
               "'s canary holds the slot)"});
    }
  }
  for (ReleaseEvent& e : restoredEvents) plan.events.push_back(std::move(e));
  if (record) out.writes.insert(out.writes.begin(), std::move(*record));
  foldCanaryPlan(plan, cp, prevStatus, generation, o.now);
  out.canary = std::move(cp);
  return out;
}

namespace {

// A manual rollback that cannot run: dropped, with InvalidSpec on the release
// (Stalled; the phase stays), and terminal once the status is written.
void refuseRollback(ProdPlan& out, const ReleaseObserved& o, const v1::ModelRelease& r,
                    ReleasePlan& plan, const std::string& message) {
  const json& prevStatus = v1::decode::object(o.release, "status");
  plan.modelRollback.reset();
  json& status = plan.status;
  status["phase"] = v1::decode::string(prevStatus, "phase");
  status["rollback"] = v1::decode::object(prevStatus, "rollback");
  status["rollback"]["refused"] = message;
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  kube::setCondition(conditions,
                     {v1::kConditionReady, v1::kStatusFalse, v1::kReasonInvalidSpec, message},
                     r.meta.generation, o.now);
  kube::setCondition(conditions,
                     {v1::kConditionStalled, v1::kStatusTrue, v1::kReasonInvalidSpec, message},
                     r.meta.generation, o.now);
  std::erase_if(plan.events,
                [](const ReleaseEvent& e) { return e.reason == v1::kReasonManualRollback; });
  plan.events.push_back({kube::kEventTypeWarning, v1::kReasonInvalidSpec, message});
  plan.statusChanged = status != prevStatus;
  out.writes.clear();
  out.afterStatus = Status(Code::kInvalidArgument, message);
}

}  // namespace

ProdPlan planRollbackWrites(const ReleaseObserved& o, const v1::ModelRelease& r,
                            const kube::ObjectPtr& releaseObject, const ProdObserved& p,
                            ReleasePlan& plan) {
  ProdPlan out;
  const ModelRollbackRequest rb = *plan.modelRollback;
  const std::string& name = r.meta.name;
  // The planner decided from this same cache; a moved Model means plan again.
  const v1::Model model = p.model ? v1::decodeModel(*p.model) : v1::Model{};
  if (!p.model || model.promoted() != rb.from || model.prodRevision() != rb.revision ||
      !model.canaryHolder().empty()) {
    out.stop = true;
    out.stopRequeueSeconds = 1;
    return out;
  }
  const v1::Stage* stage = r.prodStage();
  auto spec = stage != nullptr
                  ? canarySpecOf(*stage)
                  : StatusOr<v1::CanarySpec>(Status(Code::kInvalidArgument, "no prod stage"));
  if (!spec.isOk()) {
    refuseRollback(out, o, r, plan, "rollback target: " + spec.status().message());
    return out;
  }
  // The Model's replicas and GPU strategy, not the target's.
  applyModelSpec(*spec, model);
  if (!p.lookupError.isOk()) {
    stopWith(out, p.lookupError);
    return out;
  }
  // Surge re-templates stable with one extra pod first: it needs a spare GPU.
  // On a full cluster stable trades one pod at a time instead (drain: a pod
  // goes, its GPU takes the target's pod), as a canary's rollback does; a surge
  // pod would stay Pending and the rollback never end.
  if (spec->capacity == v1::CapacityMode::kSurge && p.gpu) {
    if (const GpuCheck check = gpuPreCheck(*p.gpu, 1); !check.go) {
      spec->capacity = v1::CapacityMode::kDrain;
      plan.events.push_back({kube::kEventTypeNormal, kReasonRollbackTradesPods,
                             "rollback of model " + r.spec.model + " to release " + name +
                                 ": no spare GPU for a surge pod (" + check.message +
                                 "); stable's pods are replaced one at a time"});
    }
  }
  if (auto conflict = findNameConflict(r.spec.model, p, "")) {
    const std::string m = conflict->message(r.meta.ns, r.spec.model);
    out.events.push_back({kube::kEventTypeWarning, v1::kReasonNameConflict, m});
    out.stop = true;
    out.stopError = Status(Code::kUnavailable, "rolling model " + r.spec.model + " back: " + m);
    return out;
  }
  // The rollback writes the Deployments only: its target must serve on the
  // model's port (the Service port belongs to the model).
  if (auto port = prodPort(model, p); port && *port != spec->port) {
    refuseRollback(out, o, r, plan,
                   "rollback target: release " + name + " serves on port " +
                       std::to_string(spec->port) + ", but Service " + r.meta.ns + "/" +
                       r.spec.model + " of model " + r.spec.model + " serves on port " +
                       std::to_string(*port) +
                       " (the Service port belongs to the model); roll back to a release "
                       "serving on that port");
    return out;
  }
  // The record goes first (guarded by the Model's resourceVersion, put in
  // front once the Deployments' writes could be planned): a rollback that
  // races a canary's claim is refused before any Deployment moves.
  const ServingObjectsInput in = servingInput(r, *spec, p);
  for (bool stableTrack : {true, false}) {
    auto w = stableTrack ? placeTrack(in, r, releaseObject, kTrackStable, name, spec->replicas,
                                      p.stableDeployment.get(), p)
                         : placeTrack(in, r, releaseObject, kTrackCanary, "", 0,
                                      p.canaryDeployment.get(), p);
    if (!w.isOk() && w.status().code() == Code::kInvalidArgument) {
      refuseRollback(out, o, r, plan, "rollback target: " + w.status().message());
      return out;
    }
    if (!w.isOk()) {
      stopWith(out, w.status().withContext("rolling model " + r.spec.model + " back to " + name));
      return out;
    }
    if (*w) out.writes.push_back(std::move(**w));
  }
  out.writes.insert(out.writes.begin(),
                    recordRollback(*p.model, {recordedOf(r, o.release, p), rb.from, rb.by, o.now}));
  out.rollbackRecordedAt = 0;
  return out;
}

namespace {

// Prod's Service and stable Deployment as Lockstep builds them from `r`, the
// release the Model records as prod (its object, or rebuilt from the record),
// re-applied where they drifted, with a Warning Event each; `source` ends the
// Events' message, `failuresOn` carries a failed write's Event. No writes:
// nothing to heal (or nothing may be written now).
ProdPlan healServingObjects(const v1::ModelRelease& r, const kube::ObjectPtr& failuresOn,
                            const v1::Model& model, const ProdObserved& p,
                            const std::string& source) {
  ProdPlan out;
  if (!p.lookupError.isOk() || findNameConflict(r.spec.model, p, "")) return out;
  for (const kube::ObjectPtr& o : {p.stableDeployment, p.service}) {
    if (o && kube::isBeingDeleted(*o)) return out;  // gone soon: heal the next one
  }
  if ((!p.stableDeployment || !p.service) && !p.namesRead) {
    out.needsNames = true;
    return out;
  }
  const v1::Stage* stage = r.prodStage();
  if (stage == nullptr) return out;
  auto spec = canarySpecOf(*stage);
  if (!spec.isOk()) return out;
  applyModelSpec(*spec, model);
  if (auto port = prodPort(model, p); port && *port != spec->port)
    return out;  // the Service port is the model's; ServicePortConflict says so
  const ServingObjectsInput in = servingInput(r, *spec, p);
  auto restore = [&](PlannedApply w, const std::string& what, const std::string& drift) {
    w.failureEventOn = failuresOn;
    w.failureEventReason = v1::kReasonServingApplyFailed;
    out.writes.push_back(std::move(w));
    out.events.push_back({kube::kEventTypeWarning, kReasonProdRestored,
                          what + " " + drift + ": restored to release " + r.meta.name +
                              "'s serving objects " + source});
  };
  auto sr = servingReleaseOf(r, p);
  if (sr.isOk()) {
    auto built = buildServingDeployment(in, kTrackStable, *sr, spec->replicas);
    if (built.isOk()) {
      const std::string name = servingDeploymentName(r.spec.model, kTrackStable);
      const std::string drift = p.stableDeployment
                                    ? deploymentDrift(*built, *p.stableDeployment, in.fetchCommand)
                                    : std::string("is missing");
      // Scaled only: scaled back, its template untouched (no pod restarts
      // when only the operator's own settings changed since).
      bool scaledOnly = false;
      if (!drift.empty() && p.stableDeployment) {
        json scaled = *built;
        scaled["spec"]["replicas"] = specReplicas(p.stableDeployment.get());
        scaledOnly = deploymentDrift(scaled, *p.stableDeployment, in.fetchCommand).empty();
      }
      if (scaledOnly) {
        PlannedApply w = plannedMergePatch(
            v1::kDeployments, r.meta.ns, name, json{{"spec", {{"replicas", spec->replicas}}}},
            "scaling Deployment " + name + " to " + std::to_string(spec->replicas));
        w.uid = v1::decodeMeta(*p.stableDeployment).uid;
        restore(std::move(w), "Deployment " + name, drift);
      } else if (!drift.empty()) {
        restore(ownedWrite(v1::kDeployments, std::move(*built), p.stableDeployment.get(),
                           "Deployment " + name + " (release " + r.meta.name + ")"),
                "Deployment " + name, drift);
      } else if (auto hash = templateHashPatch(*built, *p.stableDeployment)) {
        // Its template holds Lockstep's (e.g. built before the annotation
        // existed): the hash recorded on the Deployment's metadata, no pod restarts.
        PlannedApply w = plannedMergePatch(
            v1::kDeployments, r.meta.ns, name, std::move(*hash),
            "recording the template hash of Deployment " + name + " (release " + r.meta.name + ")");
        w.uid = v1::decodeMeta(*p.stableDeployment).uid;
        w.failureEventOn = failuresOn;
        w.failureEventReason = v1::kReasonServingApplyFailed;
        out.writes.push_back(std::move(w));
      }
    }
  }
  // No canary holds the slot: the canary track runs no pods (a rolled-back
  // release's pods scaled up again would take traffic).
  if (const kube::ObjectPtr& canary = p.canaryDeployment;
      canary && !kube::isBeingDeleted(*canary) && specReplicas(canary.get()) != 0) {
    const std::string name = servingDeploymentName(r.spec.model, kTrackCanary);
    PlannedApply w =
        plannedMergePatch(v1::kDeployments, r.meta.ns, name, json{{"spec", {{"replicas", 0}}}},
                          "scaling Deployment " + name + " to 0");
    w.uid = v1::decodeMeta(*canary).uid;
    restore(std::move(w), "Deployment " + name,
            "spec.replicas is " + std::to_string(specReplicas(canary.get())) +
                ", not 0 (no canary holds the slot)");
  }
  json service = buildModelService(in);
  const std::string drift =
      p.service ? serviceDrift(service, *p.service) : std::string("is missing");
  if (!drift.empty()) {
    restore(
        ownedWrite(v1::kServices, std::move(service), p.service.get(), "Service " + r.spec.model),
        "Service " + r.spec.model, drift);
  }
  return out;
}

}  // namespace

std::optional<ProdPlan> planProdHealing(const v1::ModelRelease& r,
                                        const kube::ObjectPtr& releaseObject,
                                        const ProdObserved& p) {
  if (r.spec.model.empty() || !p.model || kube::isBeingDeleted(*p.model) || p.releaseDeleted)
    return std::nullopt;
  const std::string phase =
      v1::decode::string(v1::decode::object(*releaseObject, "status"), "phase");
  if (phase != v1::kPhasePromoted) return std::nullopt;
  const v1::Model model = v1::decodeModel(*p.model);
  // Prod's by the record (the uid, never the name alone), with no canary or
  // manual rollback moving the tracks.
  if (!model.status.prod || model.status.prod->release != r.meta.name ||
      model.status.prod->uid != r.meta.uid || !model.canaryHolder().empty())
    return std::nullopt;
  ProdPlan out = healServingObjects(
      r, releaseObject, model, p, "(Model " + r.meta.ns + "/" + r.spec.model + " runs it as prod)");
  if (out.needsNames) return out;
  // A record an earlier operator wrote holds no stages: the release object
  // prod runs gives them, once, when they are the recorded content (a Model
  // status write guarded by its resourceVersion, before any serving write).
  const v1::ProdContent& rec = *model.status.prod;
  if (!rec.stages.is_array() && rec.stagesNotRecorded.empty()) {
    const json& stages = v1::decode::array(v1::decode::object(*releaseObject, "spec"), "stages");
    if (v1::stagesMatchContent(rec, stages)) {
      v1::ModelStatus s = model.status;
      v1::recordStages(*s.prod, stages);
      out.writes.insert(out.writes.begin(),
                        modelStatusWrite(*p.model, s,
                                         "recording the stages of release " + r.meta.name +
                                             " on Model " + r.spec.model + " (status.prod)"));
    }
  }
  if (out.writes.empty()) return std::nullopt;
  return out;
}

std::optional<ProdPlan> planRecordedProdHealing(const ProdObserved& p) {
  if (!p.model || kube::isBeingDeleted(*p.model)) return std::nullopt;
  const v1::Model model = v1::decodeModel(*p.model);
  if (!model.status.prod || !model.canaryHolder().empty()) return std::nullopt;
  auto object = recordedProdRelease(model);
  if (!object.isOk()) {
    if (object.status().code() == Code::kNotFound) return std::nullopt;
    ProdPlan refused;
    refused.events.push_back(
        {kube::kEventTypeWarning, v1::kReasonAnchorMismatch,
         object.status().message() + "; prod's serving objects are not rebuilt from it"});
    return refused;
  }
  const v1::ModelRelease r = v1::decodeModelRelease(*object);
  ProdPlan out = healServingObjects(
      r, p.model, model, p,
      "from the record of Model " + model.meta.ns + "/" + model.meta.name +
          " (status.prod: it runs that release as prod; the release object is gone)");
  if (out.writes.empty() && !out.needsNames) return std::nullopt;
  return out;
}

}  // namespace lockstep::controllers
