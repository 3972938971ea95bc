// What the prod stage of a ModelRelease reads besides the release itself
// (the shell fills it from its informer caches; modelrelease_controller.h):
// the model's Model (the record of prod), its two Deployments and serving
// pods, the releases the stable track may run and their RuntimeEnvs, the free
// GPUs on compatible nodes, and the one measurement a plan asked for.
// Thread-safety: a value (cached objects are shared, never modified).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "controllers/modelrelease/prod/analysis.h"
#include "controllers/modelrelease/prod/canary_progress.h"
#include "controllers/modelrelease/prod/gpu_capacity.h"
#include "controllers/modelrelease/runtime_pod.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// The three serving objects are whatever stands at that name, Lockstep's or
// not (ownership.h decides): the labelled caches, else one GET of the name.
struct ProdObserved {
  kube::ObjectPtr model;  // the Model <model> (api/v1alpha1/model.h); null: not created yet
  // The anchor ConfigMap lockstep-model-<model> an earlier version kept the
  // record in (labelled lockstep.dev/model); null: none. Read only to build
  // the Model from it (model_record.h, "Migration").
  kube::ObjectPtr legacyAnchor;
  kube::ObjectPtr service;           // <model>; null: none yet
  kube::ObjectPtr stableDeployment;  // <model>-stable; null: none yet
  kube::ObjectPtr canaryDeployment;  // <model>-canary
  // The model's serving pods: those labelled lockstep.dev/model whose owner
  // chain leads to one of its Deployments (servingPodsOf, ownership.h); a pod
  // that merely carries prod's labels is not among them.
  std::vector<kube::ObjectPtr> pods;
  // The ReplicaSets labelled lockstep.dev/model=<model>, by name (slimmed:
  // api/v1alpha1/serving_pod.h slimReplicaSet).
  std::map<std::string, kube::ObjectPtr> replicaSets;
  // Releases the tracks may run other than the one reconciled (the Model's
  // prod, the canary's recorded known-good), by name; absent: gone. A release
  // found by name is the recorded one only when its uid or its content digest
  // is the record's (prod_plan.h): a re-created name is never followed.
  std::map<std::string, kube::ObjectPtr> releases;
  // The RuntimeEnvs of the reconciled release and of `releases`, by name.
  std::map<std::string, kube::ObjectPtr> runtimeEnvs;
  // The highest n of any rollback.lockstep.dev/<n> request (annotation) a
  // release of the model carries, or that one recorded (status.rollback.revision);
  // a Model's first status write starts its revision past it (a re-created Model
  // never lets an old request fire).
  int64_t highestRollbackRevision = 0;
  // The free GPUs per compatible node, when the serving template asks for GPUs.
  std::optional<GpuCapacity> gpu;
  // The canary's progress clock as the last plan of this release left it (the
  // shell's memory; nullopt after a restart): CanaryObserved::progress.
  std::optional<CanaryProgress> progress;
  // Taken because the previous plan of this reconcile asked (ProdPlan::measure).
  std::optional<Measurement> measurement;
  // A read of one of the serving names failed (not NotFound): nothing in prod is
  // written until it succeeds (an object that could not be read may be foreign).
  Status lookupError;
  // The serving names the caches missed were read (ModelReleaseReconciler::readProdNames).
  bool namesRead = false;
  // The release is being deleted (it still carries kReleaseCleanupFinalizer):
  // its canary rolls back as on an abort, reason ReleaseDeleted.
  bool releaseDeleted = false;
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // InitContainer mode
  std::string cliImage;  // --cli-image: RuntimeEnv spec.verify.onStart (runtime_pod.h)
};

}  // namespace lockstep::controllers
