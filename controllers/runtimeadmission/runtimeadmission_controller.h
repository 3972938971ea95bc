// The RuntimeAdmission controller's shell (admission.mode=policy): for each
// namespace with a RuntimeEnv it keeps the table `lockstep-runtimes` that the pod
// ValidatingAdmissionPolicy reads (controllers/runtimeadmission/runtimeadmission_plan.h).
// Any change of a RuntimeEnv, status included (a new revision, a pin, Ready),
// reconciles its namespace's table from the informer caches; the only API call is
// the write.
// Thread-safety: reconcile() may run on several workers for different namespaces.
#pragma once

#include <memory>
#include <string>

#include "operator/kube/client.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

class RuntimeAdmissionReconciler final : public runtime::Reconciler {
 public:
  RuntimeAdmissionReconciler(std::shared_ptr<kube::Client> client, const kube::Indexer& runtimeEnvs,
                             const kube::Indexer& tables, kube::EventSink& events,
                             std::string trustedInitImage);
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  std::shared_ptr<kube::Client> client_;
  const kube::Indexer& runtimeEnvs_;
  const kube::Indexer& tables_;
  kube::EventSink& events_;
  std::string trustedInitImage_;
};

// Registers the informers and the controller on `manager`. `trustedInitImage` is the
// operator's --cli-image (the verification init containers' image, by digest).
void setupRuntimeAdmissionController(runtime::Manager& manager, const std::string& trustedInitImage,
                                     int workers = 1);

}  // namespace lockstep::controllers
