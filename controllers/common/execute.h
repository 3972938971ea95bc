// The generic execution of an ExecutionPlan (controllers/common/plan.h), the
// "execute" of observe -> plan -> execute for every controller: apply owned
// objects, apply the status fields owned on other objects, prune, record
// Events (best effort), and write the reconciled object's status last. The
// first failing write stops the plan, and resultFor() (operator/runtime/
// reconciler.h) says whether it is retried.
// Thread-safety: stateless; safe from several workers.
#pragma once

#include <string>

#include "controllers/common/plan.h"
#include "operator/kube/client.h"
#include "operator/kube/event_sink.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

struct ExecutionOutcome {
  runtime::Result result;
  bool statusWritten = false;
  size_t applied = 0;  // entries of plan.apply written (the first failing one stops the plan)
};

ExecutionOutcome execute(const ExecutionPlan& plan, kube::Client& client, kube::EventSink& events,
                         const std::string& controller);

}  // namespace lockstep::controllers
