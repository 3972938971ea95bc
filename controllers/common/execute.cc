#include "controllers/common/execute.h"

#include <spdlog/spdlog.h>

#include "operator/kube/api_error.h"

namespace lockstep::controllers {
namespace {

StatusOr<kube::Object> write(kube::Client& client, const PlannedApply& a, bool status) {
  status = status || a.statusSubresource;
  kube::Object object = a.object;
  if (!a.resourceVersion.empty() && a.verb != WriteVerb::kMergePatch) {
    object["metadata"]["resourceVersion"] = a.resourceVersion;
  }
  if (!a.uid.empty() && a.verb != WriteVerb::kCreate) object["metadata"]["uid"] = a.uid;
  kube::PatchParams params;
  params.fieldManager = a.fieldManager;
  switch (a.verb) {
    case WriteVerb::kCreate: {
      auto created = client.create(a.resource, object);
      if (!created.isOk() && created.status().code() == Code::kAlreadyExists) {
        if (!a.alreadyExistsIsConflict) return object;
        return Status(Code::kConflict, a.resource.kind + " " + kube::name(object) +
                                           " was created by someone else after it was read; "
                                           "planning again from what stands there");
      }
      return created;
    }
    case WriteVerb::kUpdate:
      return status ? client.updateStatus(a.resource, object) : client.update(a.resource, object);
    case WriteVerb::kMergePatch:
      return client.mergePatch(a.resource, a.ns, a.name, object, status ? "status" : "");
    case WriteVerb::kApply:
      break;
  }
  return status ? client.applyStatus(a.resource, object, params)
                : client.apply(a.resource, object, params);
}

// OK, or the error with what was being written (and its failure Event recorded).
Status applyOne(kube::Client& client, kube::EventSink& events, const PlannedApply& a, bool status) {
  auto applied = write(client, a, status);
  if (applied.isOk()) return Status::ok();
  // The uid precondition failed: the server calls a changed uid "field is
  // immutable" (Invalid). The object was replaced since it was read: plan again.
  if (!a.uid.empty() && applied.status().code() == Code::kInvalid &&
      applied.status().message().find("metadata.uid") != std::string::npos) {
    applied = Status(Code::kConflict, a.resource.kind + " " +
                                          (a.name.empty() ? kube::name(a.object) : a.name) +
                                          " was replaced since it was read (it had uid " + a.uid +
                                          "); planning again from what stands there");
  }
  if (a.ignoreNotFound && applied.status().code() == Code::kNotFound) return Status::ok();
  if (a.failureEventOn && !a.failureEventReason.empty() &&
      (a.failureEventWhenTransient || !kube::isTransient(applied.status()))) {
    const std::string& m = applied.status().message();
    (void)events.record(*a.failureEventOn, kube::kEventTypeWarning, a.failureEventReason,
                        a.what.empty() ? m : a.what + ": " + m);
  }
  return a.what.empty() ? applied.status() : applied.status().withContext(a.what);
}

}  // namespace

ExecutionOutcome execute(const ExecutionPlan& plan, kube::Client& client, kube::EventSink& events,
                         const std::string& controller) {
  ExecutionOutcome out;
  for (const auto& a : plan.apply) {
    if (Status s = applyOne(client, events, a, false); !s.isOk()) {
      out.result = runtime::resultFor(s);
      return out;
    }
    ++out.applied;
  }
  for (const auto& a : plan.applyStatus) {
    if (Status s = applyOne(client, events, a, true); !s.isOk()) {
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
    Status s = applyOne(client, events, *plan.status, true);
    // A Conflict (planned from a stale copy) or an unavailable server is retried: not an error.
    if (!s.isOk() && s.code() != Code::kNotFound && !kube::isTransient(s)) {
      spdlog::error("{}: status of {} rejected: {}", controller,
                    kube::objectKey(plan.status->object), s.toString());
    }
    out.result = runtime::resultFor(s);
    out.statusWritten = s.isOk();
  }
  return out;
}

}  // namespace lockstep::controllers
