#include "controllers/common/execute.h"

#include <spdlog/spdlog.h>

namespace lockstep::controllers {
namespace {

// OK, or the error with what was being written.
Status applyOne(kube::Client& client, const PlannedApply& a, bool status) {
  kube::PatchParams params;
  params.fieldManager = a.fieldManager;
  auto applied = status ? client.applyStatus(a.resource, a.object, params)
                        : client.apply(a.resource, a.object, params);
  if (applied.isOk()) return Status::ok();
  if (a.ignoreNotFound && applied.status().code() == Code::kNotFound) return Status::ok();
  return a.what.empty() ? applied.status() : applied.status().withContext(a.what);
}

}  // namespace

ExecutionOutcome execute(const ExecutionPlan& plan, kube::Client& client, kube::EventSink& events,
                         const std::string& controller) {
  ExecutionOutcome out;
  for (const auto& a : plan.apply) {
    if (Status s = applyOne(client, a, false); !s.isOk()) {
      out.result = runtime::resultFor(s);
      return out;
    }
  }
  for (const auto& a : plan.applyStatus) {
    if (Status s = applyOne(client, a, true); !s.isOk()) {
      out.result = runtime::resultFor(s);
      return out;
    }
  }
  for (const auto& d : plan.prune) {
    kube::DeleteOptions o;
    o.propagationPolicy = "Background";
    o.preconditions.uid = d.uid;
    Status s = client.remove(d.resource, d.ns, d.name, o);
    if (!s.isOk() && s.code() != Code::kNotFound) {
      out.result = runtime::resultFor(s.withContext("pruning " + d.resource.kind + " " + d.name));
      return out;
    }
  }
  for (const auto& e : plan.events) {
    if (!e.involved) continue;
    // Events are best effort: never fail a reconcile for one.
    if (Status s = events.record(*e.involved, e.type, e.reason, e.message); !s.isOk()) {
      spdlog::warn("{}: event {} on {}: {}", controller, e.reason, kube::objectKey(*e.involved),
                   s.toString());
    }
  }
  if (plan.status) {
    Status s = applyOne(client, *plan.status, true);
    if (!s.isOk() && s.code() != Code::kNotFound) {
      spdlog::error("{}: status of {} rejected: {}", controller,
                    kube::objectKey(plan.status->object), s.toString());
    }
    out.result = runtime::resultFor(s);
    out.statusWritten = s.isOk();
  }
  return out;
}

}  // namespace lockstep::controllers
