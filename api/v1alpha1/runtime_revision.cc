#include "api/v1alpha1/runtime_revision.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/image_ref.h"
#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

void putIfSet(json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}

void later(std::string& latest, const std::string& t) {
  if (t > latest) latest = t;
}

bool inFlight(const std::string& phase) {
  return phase == "Evaluating" || phase == "Testing" || phase == "Canary" || phase == "Promoted";
}

// Per model, the names of the last `keep` releases of `list`, newest `at` first (the
// name breaks ties).
std::set<std::string> newestPerModel(const std::vector<const ReleasePinFacts*>& list,
                                     std::string ReleasePinFacts::*at, bool promotedFirst,
                                     int64_t keep) {
  std::map<std::string, std::vector<const ReleasePinFacts*>> byModel;
  for (const ReleasePinFacts* r : list) byModel[r->model].push_back(r);
  std::set<std::string> out;
  for (auto& [model, of] : byModel) {
    std::sort(of.begin(), of.end(), [&](const ReleasePinFacts* a, const ReleasePinFacts* b) {
      if (promotedFirst) {
        bool ap = a->phase == "Promoted";
        bool bp = b->phase == "Promoted";
        if (ap != bp) return ap;
      }
      if (a->*at != b->*at) return a->*at > b->*at;
      return a->name < b->name;
    });
    for (size_t i = 0; i < of.size() && i < static_cast<size_t>(std::max<int64_t>(keep, 0)); ++i)
      out.insert(of[i]->name);
  }
  return out;
}

}  // namespace

json encodeRevision(const RuntimeRevision& r) {
  json j = {{"number", r.number}, {"image", r.image}, {"closureHash", r.closureHash}};
  putIfSet(j, "lockDigest", r.lockDigest);
  putIfSet(j, "cuda", r.cuda);
  putIfSet(j, "minDriver", r.minDriver);
  putIfSet(j, "firstResolved", r.firstResolved);
  putIfSet(j, "lastResolved", r.lastResolved);
  if (!r.pinnedBy.empty()) j["pinnedBy"] = r.pinnedBy;
  if (r.pinnedByCount > static_cast<int64_t>(r.pinnedBy.size()))
    j["pinnedByCount"] = r.pinnedByCount;
  putIfSet(j, "packages", r.packages);
  return j;
}

RuntimeRevision decodeRevision(const json& j) {
  RuntimeRevision r;
  r.number = decode::integer(j, "number", 0);
  r.image = decode::string(j, "image");
  r.closureHash = decode::string(j, "closureHash");
  r.lockDigest = decode::string(j, "lockDigest");
  r.cuda = decode::string(j, "cuda");
  r.minDriver = decode::string(j, "minDriver");
  r.firstResolved = decode::string(j, "firstResolved");
  r.lastResolved = decode::string(j, "lastResolved");
  for (const json& p : decode::array(j, "pinnedBy")) {
    if (p.is_string()) r.pinnedBy.push_back(p.get<std::string>());
  }
  r.pinnedByCount = decode::integer(j, "pinnedByCount", 0);
  r.packages = decode::string(j, "packages");
  return r;
}

std::vector<RuntimeRevision> decodeRevisions(const json& status) {
  std::vector<RuntimeRevision> out;
  for (const json& j : decode::array(status, "revisions")) {
    RuntimeRevision r = decodeRevision(j);
    if (r.number > 0) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const RuntimeRevision& a, const RuntimeRevision& b) { return a.number < b.number; });
  return out;
}

json advisoriesOfRevision(const json& advisories, int64_t revision) {
  if (!advisories.is_object()) return nullptr;
  if (decode::integer(advisories, "revision", -1) == revision) {
    json top = advisories;
    top.erase("revisions");
    return top;
  }
  for (const json& e : decode::array(advisories, "revisions"))
    if (e.is_object() && decode::integer(e, "revision", -1) == revision) return e;
  return nullptr;
}

std::optional<RuntimePin> decodeRuntimePin(const json& release) {
  const json& runtime = decode::object(decode::object(release, "status"), "runtime");
  RuntimePin pin;
  pin.revision = decode::integer(runtime, "revision", 0);
  pin.image = decode::string(runtime, "image");
  pin.closureHash = decode::string(runtime, "closureHash");
  if (pin.image.empty() || pin.closureHash.empty()) return std::nullopt;
  return pin;
}

json encodeRuntimePin(const RuntimePin& pin) {
  return {{"revision", pin.revision}, {"image", pin.image}, {"closureHash", pin.closureHash}};
}

std::string describePin(const RuntimePin& pin) {
  return "revision " + std::to_string(pin.revision) + " (" + pin.image + ", closure " +
         pin.closureHash + ")";
}

bool sameRuntimeImage(const std::string& a, const std::string& b) {
  return a == b || sameImage(a, b);
}

std::optional<RuntimePin> pinFor(const std::vector<RuntimeRevision>& revisions,
                                 int64_t currentRevision, const std::string& closureHash,
                                 const std::string& runtimeImage) {
  const RuntimeRevision* chosen = nullptr;
  for (const RuntimeRevision& rev : revisions) {
    if (rev.closureHash != closureHash ||
        (!runtimeImage.empty() && !sameRuntimeImage(rev.image, runtimeImage)))
      continue;
    if (rev.number == currentRevision) {
      chosen = &rev;
      break;
    }
    if (chosen == nullptr || rev.number > chosen->number) chosen = &rev;
  }
  if (chosen == nullptr) return std::nullopt;
  return RuntimePin{chosen->number, chosen->image, chosen->closureHash};
}

std::optional<RuntimePin> runtimeOf(const std::optional<RuntimePin>& pinned,
                                    const std::vector<RuntimeRevision>& revisions,
                                    int64_t currentRevision, const std::string& closureHash,
                                    const std::string& runtimeImage) {
  if (pinned) return pinned;
  return pinFor(revisions, currentRevision, closureHash, runtimeImage);
}

int64_t recordedRevision(const std::vector<RuntimeRevision>& revisions, const RuntimePin& pin) {
  for (const RuntimeRevision& rev : revisions) {
    if (rev.samePair(pin.image, pin.closureHash)) return rev.number;
  }
  return 0;
}

ReleasePinFacts releasePinFacts(const json& release) {
  ReleasePinFacts f;
  const json& meta = decode::object(release, "metadata");
  const json& spec = decode::object(release, "spec");
  const json& status = decode::object(release, "status");
  f.name = decode::string(meta, "name");
  f.deleting = !decode::string(meta, "deletionTimestamp").empty();
  f.model = decode::string(spec, "model");
  f.runtimeEnv = decode::string(decode::object(spec, "runtimeEnvRef"), "name");
  f.closureHash = decode::string(spec, "closureHash");
  f.runtimeImage = decode::string(spec, "runtimeImage");
  f.phase = decode::string(status, "phase");
  f.pin = decodeRuntimePin(release);
  if (f.phase == "Validated") {
    for (const json& st : decode::array(status, "stages"))
      later(f.validatedAt, decode::string(st, "finishedAt"));
  }
  // An unreadable status.canary cannot show that prod never ran the release:
  // it is held as one that did (a pin is never dropped on a guess).
  const CanaryStatusRead canary = readReleaseCanary(release);
  f.promotedOnce = !canary.error.empty() || canary.orEmpty().phase == "Promoted";
  if (f.promotedOnce) {
    for (const json& st : decode::array(status, "stages")) {
      later(f.lastProdAt, decode::string(st, "finishedAt"));
    }
    later(f.lastProdAt, canary.orEmpty().finishedAt.value_or(""));
    later(f.lastProdAt, decode::string(decode::object(status, "rollback"), "at"));
  }
  return f;
}

std::vector<ReleasePin> releasePins(const std::string& runtimeEnv,
                                    const std::vector<ReleasePinFacts>& releases,
                                    const std::vector<RuntimeRevision>& revisions,
                                    int64_t currentRevision, int64_t historyLimit) {
  // The rollback targets: per model, the last `historyLimit` releases prod ran (the
  // Promoted one first: prod runs it now). The validated ones held: per model, the
  // last `historyLimit` validated.
  std::vector<const ReleasePinFacts*> ran, validated;
  for (const ReleasePinFacts& r : releases) {
    if (r.deleting) continue;
    if (r.promotedOnce) ran.push_back(&r);
    if (r.phase == "Validated") validated.push_back(&r);
  }
  const std::set<std::string> rollbackTargets =
      newestPerModel(ran, &ReleasePinFacts::lastProdAt, true, historyLimit);
  const std::set<std::string> heldValidated =
      newestPerModel(validated, &ReleasePinFacts::validatedAt, false, historyLimit);

  std::vector<ReleasePin> out;
  for (const ReleasePinFacts& r : releases) {
    if (r.runtimeEnv != runtimeEnv || r.deleting) continue;
    PinHold hold = PinHold::kNone;
    if (inFlight(r.phase) || heldValidated.count(r.name) != 0) {
      hold = r.phase == "Promoted" ? PinHold::kPromoted : PinHold::kInFlight;
    } else if (rollbackTargets.count(r.name) != 0) {
      hold = PinHold::kRollbackTarget;
    }
    if (hold == PinHold::kNone) continue;
    ReleasePin p;
    p.release = r.name;
    p.hold = hold;
    if (r.pin) {
      // Pinned by the release side: exactly that pair (0 when it was pruned).
      p.pair = *r.pin;
      p.pair.revision = recordedRevision(revisions, *r.pin);
    } else if (auto chosen = pinFor(revisions, currentRevision, r.closureHash, r.runtimeImage)) {
      p.pair = *chosen;
    } else {
      p.pair.closureHash = r.closureHash;
    }
    p.revision = p.pair.revision;
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const ReleasePin& a, const ReleasePin& b) { return a.release < b.release; });
  return out;
}

}  // namespace lockstep::api::v1alpha1
