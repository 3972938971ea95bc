#include "controllers/runtimeenv/runtimeenv_revisions.h"

#include <algorithm>
#include <map>
#include <set>

namespace lockstep::controllers {
namespace {

using api::v1alpha1::PinHold;
using api::v1alpha1::ReleasePin;
using api::v1alpha1::RuntimeRevision;

const char* holdName(PinHold h) {
  switch (h) {
    case PinHold::kInFlight:
      return "in a gate or the canary";
    case PinHold::kPromoted:
      return "promoted";
    case PinHold::kRollbackTarget:
      return "rollback target";
    default:
      return "";
  }
}

const char* modelHoldName(api::v1alpha1::ModelPinHold h) {
  switch (h) {
    case api::v1alpha1::ModelPinHold::kProd:
      return "prod";
    case api::v1alpha1::ModelPinHold::kCanary:
      return "canary";
    case api::v1alpha1::ModelPinHold::kRollbackTarget:
      return "rollback target";
  }
  return "";
}

}  // namespace

bool RevisionsPlan::anyPinned() const {
  return std::any_of(pins.begin(), pins.end(),
                     [](const ReleasePin& p) { return p.revision > 0; }) ||
         std::any_of(modelPins.begin(), modelPins.end(),
                     [](const api::v1alpha1::ModelPin& p) { return p.pair.revision > 0; });
}

int64_t RevisionsPlan::pinnedCount() const {
  return std::count_if(revisions.begin(), revisions.end(),
                       [](const RuntimeRevision& r) { return r.pinned(); });
}

std::string RevisionsPlan::describePins() const {
  std::string out;
  for (const ReleasePin& p : pins) {
    if (!out.empty()) out += ", ";
    out += p.release + " (" +
           (p.revision > 0 ? "revision " + std::to_string(p.revision) : "a pruned revision") +
           ", " + holdName(p.hold) + ")";
  }
  for (const api::v1alpha1::ModelPin& p : modelPins) {
    if (!out.empty()) out += ", ";
    out += p.release + " (" +
           (p.pair.revision > 0 ? "revision " + std::to_string(p.pair.revision)
                                : "a pruned revision") +
           ", Model " + p.model + "'s " + modelHoldName(p.hold) + ")";
  }
  return out;
}

RevisionsPlan planRevisions(const RevisionsInput& in) {
  RevisionsPlan plan;
  std::vector<RuntimeRevision> revs = in.recorded;
  std::sort(revs.begin(), revs.end(),
            [](const RuntimeRevision& a, const RuntimeRevision& b) { return a.number < b.number; });
  int64_t current = in.currentRevision;
  auto find = [&revs](int64_t number) -> RuntimeRevision* {
    for (RuntimeRevision& r : revs) {
      if (r.number == number) return &r;
    }
    return nullptr;
  };
  if (find(current) == nullptr) current = 0;  // a status that lost its current entry

  if (in.resolved) {
    const ResolvedPair& p = *in.resolved;
    RuntimeRevision* match = nullptr;
    for (RuntimeRevision& r : revs) {
      if (r.samePair(p.image, p.closureHash)) match = &r;
    }
    if (match == nullptr) {
      RuntimeRevision r;
      r.number = revs.empty() ? 1 : revs.back().number + 1;
      r.image = p.image;
      r.closureHash = p.closureHash;
      r.firstResolved = in.now;
      r.lastResolved = in.now;
      revs.push_back(r);
      match = &revs.back();
      plan.created = r.number;
    } else if (match->number != current) {
      match->lastResolved = in.now;
      plan.restored = match->number;
    }
    match->lockDigest = p.lockDigest;
    match->cuda = p.cuda;
    match->minDriver = p.minDriver;
    match->packages = p.packages;
    const int64_t next = match->number;
    if (current != 0 && current != next) {
      if (RuntimeRevision* old = find(current)) old->lastResolved = in.now;
    }
    current = next;
  }

  plan.pins =
      api::v1alpha1::releasePins(in.runtimeEnv, in.releases, revs, current, in.historyLimit);
  std::map<int64_t, std::set<std::string>> pinnedBy;
  for (const ReleasePin& p : plan.pins) {
    if (p.revision > 0) pinnedBy[p.revision].insert(p.release);
  }
  // What the Models' records hold, once per (release, revision) not already held.
  for (const api::v1alpha1::ModelPin& m : in.models) {
    if (m.runtimeEnv != in.runtimeEnv || m.pair.image.empty() || m.pair.closureHash.empty())
      continue;
    api::v1alpha1::ModelPin held = m;
    held.pair.revision = api::v1alpha1::recordedRevision(revs, m.pair);
    const bool byRelease =
        std::any_of(plan.pins.begin(), plan.pins.end(), [&held](const ReleasePin& p) {
          return p.release == held.release && p.revision == held.pair.revision;
        });
    if (byRelease) continue;
    if (held.pair.revision > 0) pinnedBy[held.pair.revision].insert(held.release);
    plan.modelPins.push_back(std::move(held));
  }
  for (RuntimeRevision& r : revs) {
    const auto& names = pinnedBy[r.number];
    const bool wasTruncated = r.pinnedByCount > 0;
    r.pinnedByCount = 0;
    if (names.size() <= api::v1alpha1::kMaxPinnedByListed) {
      r.pinnedBy.assign(names.begin(), names.end());
      continue;
    }
    // The first names in order are listed, all are counted (kMaxPinnedByListed).
    r.pinnedBy.assign(names.begin(), std::next(names.begin(), api::v1alpha1::kMaxPinnedByListed));
    r.pinnedByCount = static_cast<int64_t>(names.size());
    plan.truncatedPins.push_back({r.number, r.pinnedByCount, !wasTruncated});
  }

  // Keep the current, the pinned and the highest-numbered revisions, and the
  // newest `historyLimit` of the others.
  const int64_t highest = revs.empty() ? 0 : revs.back().number;
  int64_t unpinnedKept = 0;
  const int64_t limit = std::max<int64_t>(in.historyLimit, 0);
  std::vector<RuntimeRevision> kept;
  for (size_t i = revs.size(); i-- > 0;) {  // newest first
    const RuntimeRevision& rev = revs[i];
    const bool always = rev.number == current || rev.pinned() || rev.number == highest;
    if (always || unpinnedKept < limit) {
      if (!always) ++unpinnedKept;
      kept.push_back(rev);
    } else {
      plan.pruned.push_back(rev);
    }
  }
  std::reverse(kept.begin(), kept.end());
  std::reverse(plan.pruned.begin(), plan.pruned.end());
  // The stored packages' budget: the current and pinned revisions first, newest first.
  std::vector<RuntimeRevision*> order;
  for (size_t i = kept.size(); i-- > 0;)
    if (kept[i].number == current || kept[i].pinned()) order.push_back(&kept[i]);
  for (size_t i = kept.size(); i-- > 0;)
    if (kept[i].number != current && !kept[i].pinned()) order.push_back(&kept[i]);
  size_t stored = 0;
  for (RuntimeRevision* r : order) {
    if (stored + r->packages.size() > kMaxRevisionPackagesTotal) r->packages.clear();
    stored += r->packages.size();
  }
  plan.revisions = std::move(kept);
  plan.currentRevision = current;
  return plan;
}

}  // namespace lockstep::controllers
