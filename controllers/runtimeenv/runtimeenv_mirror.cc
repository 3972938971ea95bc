#include "controllers/runtimeenv/runtimeenv_mirror.h"

#include <algorithm>
#include <chrono>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/meta.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
namespace v1 = api::v1alpha1;

// An unreachable registry or unreadable credentials are asked again this soon.
constexpr int64_t kRetryUnreachableSeconds = 60;
// While a check runs, look again this often should its wake-up be lost.
constexpr int64_t kPendingPollSeconds = 30;

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string shortDigest(const std::string& d) {
  return d.substr(0, std::min<size_t>(d.size(), 19));
}

kube::Condition conditionOf(const v1::MirrorStatus& s) {
  const std::string where = "mirror " + s.repository + " (closure " + s.closureHash +
                            ", revision " + std::to_string(s.revision) + ")";
  if (s.result == v1::kMirrorResultComplete) {
    return {v1::kConditionMirrored, v1::kStatusTrue, v1::kReasonMirrorComplete,
            "all " + plural(s.artifacts, "artifact", "artifacts") +
                " and the artifact manifest are in the " + where};
  }
  if (s.result == v1::kMirrorResultMissing) {
    return {v1::kConditionMirrored, v1::kStatusFalse, v1::kReasonArtifactsMissing,
            missingMessage(s)};
  }
  const bool credentials = s.error.rfind("credentials: ", 0) == 0;
  return {
      v1::kConditionMirrored, v1::kStatusUnknown,
      credentials ? v1::kReasonMirrorCredentialsUnavailable : v1::kReasonMirrorUnreachable,
      "the " + where + " could not be checked: " + (credentials ? s.error.substr(13) : s.error)};
}

// An Event when the condition's status, reason or (for missing artifacts) message changes.
std::optional<MirrorEvent> eventFor(const json& previous, const kube::Condition& now) {
  if (now.reason == v1::kReasonMirrorCheckPending) return std::nullopt;
  const std::string status = v1::decode::string(previous, "status");
  const std::string reason = v1::decode::string(previous, "reason");
  const std::string message = v1::decode::string(previous, "message");
  const bool changed = status != now.status || reason != now.reason ||
                       (now.reason == v1::kReasonArtifactsMissing && message != now.message);
  if (!changed) return std::nullopt;
  return MirrorEvent{
      now.status == v1::kStatusTrue ? kube::kEventTypeNormal : kube::kEventTypeWarning, now.reason,
      now.message};
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

bool secretLendsTo(const std::string& annotation, const mirror::RepositoryRef& repository) {
  const std::string repo = repository.registry + "/" + repository.repository;
  size_t start = 0;
  while (start <= annotation.size()) {
    size_t end = annotation.find(',', start);
    if (end == std::string::npos) end = annotation.size();
    std::string entry = trim(annotation.substr(start, end - start));
    while (!entry.empty() && entry.back() == '/') entry.pop_back();
    // A repository has a path: a bare host lends nothing (it would lend every repository).
    if (entry.find('/') != std::string::npos && (repo == entry || repo.rfind(entry + "/", 0) == 0))
      return true;
    start = end + 1;
  }
  return false;
}

int64_t nextCheckUnix(const v1::MirrorSpec& spec, int64_t checkedAtUnix, bool unreachable) {
  return checkedAtUnix + (unreachable ? std::min(spec.intervalSeconds, kRetryUnreachableSeconds)
                                      : spec.intervalSeconds);
}

std::string missingMessage(const v1::MirrorStatus& s) {
  std::string m;
  if (s.missing > 0) {
    m = std::to_string(s.missing) + " of " + plural(s.artifacts, "artifact", "artifacts") +
        (s.missing == 1 ? " is" : " are") + " missing from the mirror " + s.repository +
        " (closure " + s.closureHash + ", revision " + std::to_string(s.revision) + "): ";
    size_t named = 0;
    for (const v1::MissingArtifact& a : s.missingArtifacts) {
      if (named == kMaxNamed) break;
      m += (named == 0 ? "" : ", ") + a.file + " (" + shortDigest(a.digest) + "…)";
      ++named;
    }
    if (s.missing > static_cast<int64_t>(named))
      m += " and " + std::to_string(s.missing - static_cast<int64_t>(named)) + " more";
  }
  if (!s.manifestPresent) {
    if (m.empty()) {
      m = "the artifact manifest (tag " + mirror::mirrorTag(s.closureHash) +
          ") is missing from the mirror " + s.repository + " (closure " + s.closureHash +
          ", revision " + std::to_string(s.revision) + "); all " + std::to_string(s.artifacts) +
          " artifacts are there";
    } else {
      m += "; the artifact manifest (tag " + mirror::mirrorTag(s.closureHash) + ") is missing too";
    }
  }
  return m;
}

v1::MirrorStatus recordOf(const MirrorCheckResult& r, const v1::MirrorSpec& spec) {
  v1::MirrorStatus s;
  s.repository = r.repository;
  s.revision = r.revision;
  s.closureHash = r.closureHash;
  s.checkedAt = kube::timeOfUnixSeconds(r.checkedAtUnix);
  const bool unreachable = r.outcome != MirrorCheckResult::Outcome::kChecked;
  s.nextCheckAt = kube::timeOfUnixSeconds(nextCheckUnix(spec, r.checkedAtUnix, unreachable));
  s.artifacts = r.artifacts;
  if (unreachable) {
    s.result = v1::kMirrorResultUnreachable;
    s.error =
        (r.outcome == MirrorCheckResult::Outcome::kCredentials ? "credentials: " : "") + r.error;
    return s;
  }
  s.manifestPresent = r.manifestPresent;
  s.missing = static_cast<int64_t>(r.missing.size());
  s.result =
      s.missing == 0 && s.manifestPresent ? v1::kMirrorResultComplete : v1::kMirrorResultMissing;
  for (size_t i = 0; i < r.missing.size() && i < v1::kMaxMissingListed; ++i)
    s.missingArtifacts.push_back(r.missing[i]);
  return s;
}

MirrorPlan planMirrorCheck(const MirrorInput& in) {
  MirrorPlan plan;
  if (in.beingDeleted) {
    // No more checks; the last record stays until the RuntimeEnv is gone.
    plan.keep = true;
    plan.missingGauge = -1;
    return plan;
  }
  if (!in.spec && in.specError.empty()) {
    plan.missingGauge = -1;
    return plan;  // status.mirror and the condition removed
  }
  auto invalid = [&](const std::string& message) {
    plan.status = in.previousStatus;
    plan.mirrored = kube::Condition{v1::kConditionMirrored, v1::kStatusFalse,
                                    v1::kReasonInvalidMirror, message};
    if (auto e = eventFor(in.previousCondition, *plan.mirrored)) plan.events.push_back(*e);
    plan.missingGauge = -1;
    return plan;
  };
  if (!in.specError.empty()) return invalid(in.specError);
  const v1::MirrorSpec& spec = *in.spec;
  auto where = mirror::parseRepository(spec.repository);
  if (!where.isOk()) return invalid("spec.mirror.repository: " + where.status().message());
  if (in.closure == nullptr) {
    plan.keep = true;
    return plan;
  }
  auto files = mirror::planMirror(*in.closure);
  if (!files.isOk())
    return invalid("the closure's files cannot be mirrored: " + files.status().message());

  // The record for this closure and repository: the checker's latest, else the status's.
  std::optional<v1::MirrorStatus> record;
  const v1::MirrorStatus previous = v1::decodeMirrorStatus(in.previousStatus);
  if (!previous.result.empty() && previous.closureHash == in.closureHash &&
      previous.repository == spec.repository) {
    record = previous;
    // The interval may have changed since it was written.
    const bool unreachable = previous.result == v1::kMirrorResultUnreachable;
    record->nextCheckAt = kube::timeOfUnixSeconds(
        nextCheckUnix(spec, kube::unixSecondsOf(previous.checkedAt), unreachable));
  }
  if (in.latest && in.latest->closureHash == in.closureHash &&
      in.latest->repository == spec.repository &&
      (!record || in.latest->checkedAtUnix > kube::unixSecondsOf(record->checkedAt))) {
    record = recordOf(*in.latest, spec);
  }

  int64_t due = in.nowUnix;
  if (record) {
    plan.status = v1::encodeMirrorStatus(*record);
    plan.mirrored = conditionOf(*record);
    due = kube::unixSecondsOf(record->nextCheckAt);
    if (record->result != v1::kMirrorResultUnreachable) plan.missingGauge = record->missing;
  } else {
    // Nothing checked for this closure yet: an older record (another revision or
    // repository) stays in status.mirror, which names what it describes.
    plan.status = in.previousStatus;
    plan.mirrored = kube::Condition{
        v1::kConditionMirrored, v1::kStatusUnknown, v1::kReasonMirrorCheckPending,
        "checking " + plural(static_cast<int64_t>(files->entries.size()), "artifact", "artifacts") +
            " of closure " + in.closureHash + " (revision " + std::to_string(in.revision) +
            ") in the mirror " + spec.repository};
  }
  if (auto e = eventFor(in.previousCondition, *plan.mirrored)) plan.events.push_back(*e);
  if (due <= in.nowUnix) {
    MirrorCheckRequest req;
    req.name = in.name;
    req.repository = spec.repository;
    req.where = *where;
    req.credentialsSecret = spec.credentialsSecret;
    req.revision = in.revision;
    req.closureHash = in.closureHash;
    req.artifacts = std::move(files->entries);
    plan.check = std::move(req);
    plan.requeueAfterSeconds = kPendingPollSeconds;
  } else {
    plan.requeueAfterSeconds = due - in.nowUnix;
  }
  return plan;
}

}  // namespace lockstep::controllers
