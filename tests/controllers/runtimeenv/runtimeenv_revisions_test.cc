// Table tests of the revision bookkeeping (runtimeenv_revisions.h) and the
// pinning rule (api/v1alpha1/runtime_revision.h): pure, no cluster.
#include "controllers/runtimeenv/runtimeenv_revisions.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lockstep::controllers {
namespace {

using api::v1alpha1::PinHold;
using api::v1alpha1::ReleasePinFacts;
using api::v1alpha1::RuntimePin;
using api::v1alpha1::RuntimeRevision;

const std::string kT0 = "2026-11-29T10:00:00Z";
const std::string kT1 = "2026-11-29T11:00:00Z";
const std::string kT2 = "2026-11-29T12:00:00Z";

std::string img(char c) { return "registry.example/runtimes/torch@sha256:" + std::string(64, c); }
std::string hash(char c) { return "sha256:" + std::string(64, c); }

RuntimeRevision rev(int64_t n, const std::string& image, const std::string& h) {
  RuntimeRevision r;
  r.number = n;
  r.image = image;
  r.closureHash = h;
  r.firstResolved = kT0;
  r.lastResolved = kT0;
  return r;
}

ResolvedPair pair(const std::string& image, const std::string& h) {
  return ResolvedPair{image, h, "sha256:" + std::string(64, '0'), "12.4", "550.54.14", ""};
}

ReleasePinFacts release(const std::string& name, const std::string& phase,
                        const std::string& closureHash, const std::string& model = "gpt2",
                        const std::string& rte = "torch") {
  ReleasePinFacts f;
  f.name = name;
  f.model = model;
  f.runtimeEnv = rte;
  f.closureHash = closureHash;
  f.phase = phase;
  return f;
}

ReleasePinFacts promoted(const std::string& name, const std::string& phase,
                         const std::string& closureHash, const std::string& lastProdAt) {
  ReleasePinFacts f = release(name, phase, closureHash);
  f.promotedOnce = true;
  f.lastProdAt = lastProdAt;
  return f;
}

std::vector<int64_t> numbers(const std::vector<RuntimeRevision>& revs) {
  std::vector<int64_t> out;
  for (const auto& r : revs) out.push_back(r.number);
  return out;
}

const RuntimeRevision& numbered(const RevisionsPlan& p, int64_t n) {
  for (const auto& r : p.revisions) {
    if (r.number == n) return r;
  }
  static const RuntimeRevision none;
  ADD_FAILURE() << "no revision " << n;
  return none;
}

RevisionsInput input(std::vector<RuntimeRevision> recorded, int64_t current,
                     std::optional<ResolvedPair> resolved,
                     std::vector<ReleasePinFacts> releases = {}, int64_t limit = 5) {
  RevisionsInput in;
  in.runtimeEnv = "torch";
  in.recorded = std::move(recorded);
  in.currentRevision = current;
  in.resolved = std::move(resolved);
  in.releases = std::move(releases);
  in.historyLimit = limit;
  in.now = kT1;
  return in;
}

TEST(PlanRevisions, FirstResolutionIsRevisionOne) {
  RevisionsPlan p = planRevisions(input({}, 0, pair(img('a'), hash('1'))));
  ASSERT_EQ(numbers(p.revisions), (std::vector<int64_t>{1}));
  EXPECT_EQ(p.currentRevision, 1);
  EXPECT_EQ(p.created, 1);
  EXPECT_EQ(p.revisions[0].image, img('a'));
  EXPECT_EQ(p.revisions[0].closureHash, hash('1'));
  EXPECT_EQ(p.revisions[0].cuda, "12.4");
  EXPECT_EQ(p.revisions[0].minDriver, "550.54.14");
  EXPECT_EQ(p.revisions[0].firstResolved, kT1);
  EXPECT_EQ(p.revisions[0].lastResolved, kT1);
}

TEST(PlanRevisions, SamePairAgainChangesNothing) {
  RuntimeRevision r1 = rev(1, img('a'), hash('1'));
  r1.lockDigest = "sha256:" + std::string(64, '0');
  r1.cuda = "12.4";
  r1.minDriver = "550.54.14";
  RevisionsPlan p = planRevisions(input({r1}, 1, pair(img('a'), hash('1'))));
  EXPECT_EQ(p.created, 0);
  EXPECT_EQ(p.restored, 0);
  ASSERT_EQ(p.revisions.size(), 1u);
  EXPECT_EQ(p.revisions[0].lastResolved, kT0);  // no transition, no new time
  EXPECT_TRUE(p.pruned.empty());
}

TEST(PlanRevisions, TransitionsTable) {
  struct Case {
    std::string name;
    ResolvedPair resolved;
    int64_t wantCurrent;
    int64_t wantCreated;
    int64_t wantRestored;
  };
  // Recorded: 1 (a, h1), 2 (a, h2) current.
  const std::vector<Case> cases = {
      {"lock edit: new closure is a new revision", pair(img('a'), hash('3')), 3, 3, 0},
      {"image swap, same lock: a new revision", pair(img('b'), hash('2')), 3, 3, 0},
      {"back to an old pair: that revision again", pair(img('a'), hash('1')), 1, 0, 1},
      {"the same pair: nothing", pair(img('a'), hash('2')), 2, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RevisionsPlan p = planRevisions(
        input({rev(1, img('a'), hash('1')), rev(2, img('a'), hash('2'))}, 2, c.resolved));
    EXPECT_EQ(p.currentRevision, c.wantCurrent);
    EXPECT_EQ(p.created, c.wantCreated);
    EXPECT_EQ(p.restored, c.wantRestored);
    if (c.wantCurrent != 2) {
      // Both ends of the transition carry its time.
      EXPECT_EQ(numbered(p, 2).lastResolved, kT1);
      EXPECT_EQ(numbered(p, c.wantCurrent).lastResolved, kT1);
      EXPECT_EQ(numbered(p, 1).firstResolved, kT0);
    } else {
      EXPECT_EQ(numbered(p, 2).lastResolved, kT0);
    }
  }
}

TEST(PlanRevisions, UnresolvedLockKeepsTheCurrentRevision) {
  RevisionsPlan p = planRevisions(input({rev(1, img('a'), hash('1'))}, 1, std::nullopt));
  EXPECT_EQ(p.currentRevision, 1);
  EXPECT_EQ(numbers(p.revisions), (std::vector<int64_t>{1}));
}

TEST(PlanRevisions, ReleasesPinByClosureHashUntilTheyCarryStatusRuntime) {
  // 1 (a, h1), 2 (b, h1: image swap), 3 (b, h2) current.
  std::vector<RuntimeRevision> recorded = {rev(1, img('a'), hash('1')), rev(2, img('b'), hash('1')),
                                           rev(3, img('b'), hash('2'))};
  ReleasePinFacts v1 = promoted("v1", "Promoted", hash('1'), kT0);
  v1.pin = RuntimePin{1, img('a'), hash('1')};  // pinned by the release side: exactly revision 1
  ReleasePinFacts v2 = release("v2", "Evaluating", hash('1'));  // no status.runtime: newest h1
  ReleasePinFacts v3 = release("v3", "Canary", hash('2'));
  ReleasePinFacts other = release("w1", "Promoted", hash('1'), "bert", "other-rte");
  ReleasePinFacts pending = release("v4", "Pending", hash('2'));
  ReleasePinFacts validated = release("v5", "Validated", hash('2'));  // gates passed, waits
  RevisionsPlan p = planRevisions(
      input(recorded, 3, pair(img('b'), hash('2')), {v1, v2, v3, other, pending, validated}));
  EXPECT_EQ(numbered(p, 1).pinnedBy, (std::vector<std::string>{"v1"}));
  EXPECT_EQ(numbered(p, 2).pinnedBy, (std::vector<std::string>{"v2"}));
  EXPECT_EQ(numbered(p, 3).pinnedBy, (std::vector<std::string>{"v3", "v5"}));
  EXPECT_EQ(p.pinnedCount(), 3);
  ASSERT_EQ(p.pins.size(), 4u);
  EXPECT_EQ(p.pins[0].hold, PinHold::kPromoted);
  EXPECT_EQ(p.pins[1].hold, PinHold::kInFlight);
  EXPECT_EQ(p.describePins(),
            "v1 (revision 1, promoted), v2 (revision 2, in a gate or the canary), v3 (revision 3, "
            "in a gate or the canary), v5 (revision 3, in a gate or the canary)");
}

TEST(PlanRevisions, TerminalReleasesPinOnlyAsRollbackTargets) {
  // Model gpt2 was in prod as p1..p4 (p4 promoted now); limit 2: p4 (Promoted) and p3 pin.
  std::vector<RuntimeRevision> recorded;
  for (int i = 1; i <= 5; ++i) recorded.push_back(rev(i, img('a'), hash(char('0' + i))));
  std::vector<ReleasePinFacts> releases = {
      promoted("p1", "Superseded", hash('1'), "2026-11-01T00:00:00Z"),
      promoted("p2", "Superseded", hash('2'), "2026-11-02T00:00:00Z"),
      promoted("p3", "Superseded", hash('3'), "2026-11-03T00:00:00Z"),
      promoted("p4", "Promoted", hash('4'), "2026-11-01T12:00:00Z"),  // restored by a rollback
      release("f5", "Failed", hash('5')),                             // never prod
  };
  RevisionsPlan p = planRevisions(input(recorded, 5, pair(img('a'), hash('5')), releases, 2));
  EXPECT_TRUE(numbered(p, 4).pinned());
  EXPECT_EQ(numbered(p, 3).pinnedBy, (std::vector<std::string>{"p3"}));
  // Beyond the limit (p1, p2), and a failed release: unpinned, and pruned but for the newest
  // `limit` unpinned ones besides the current: 5 is current, 2 and 1 unpinned — limit 2 keeps both.
  EXPECT_FALSE(numbered(p, 2).pinned());
  EXPECT_FALSE(numbered(p, 1).pinned());
  EXPECT_FALSE(numbered(p, 5).pinned());
  EXPECT_EQ(numbers(p.revisions), (std::vector<int64_t>{1, 2, 3, 4, 5}));

  // The other model's releases and deleting releases do not count towards gpt2's limit.
  ReleasePinFacts gone = promoted("p9", "Superseded", hash('9'), "2026-11-09T00:00:00Z");
  gone.deleting = true;
  releases.push_back(gone);
  ReleasePinFacts bert = promoted("b1", "Promoted", hash('1'), "2026-11-10T00:00:00Z");
  bert.model = "bert";
  releases.push_back(bert);
  RevisionsPlan q = planRevisions(input(recorded, 5, pair(img('a'), hash('5')), releases, 2));
  EXPECT_EQ(numbered(q, 3).pinnedBy, (std::vector<std::string>{"p3"}));
  EXPECT_EQ(numbered(q, 1).pinnedBy, (std::vector<std::string>{"b1"}));
}

// Gate-only releases (CI runs) end Validated: per model, the last `limit` validated
// hold their pins, and older ones let their revisions go (issue 28: "a Validated release
// of a model without prod stops pinning after revisionHistoryLimit newer validations").
TEST(PlanRevisions, ValidatedReleasesPinOnlyTheNewestLimitOfTheirModel) {
  std::vector<RuntimeRevision> recorded;
  for (int i = 1; i <= 6; ++i) recorded.push_back(rev(i, img('a'), hash(char('0' + i))));
  std::vector<ReleasePinFacts> releases;
  for (int i = 1; i <= 4; ++i) {
    ReleasePinFacts f = release("ci" + std::to_string(i), "Validated", hash(char('0' + i)));
    f.validatedAt = "2026-11-0" + std::to_string(i) + "T00:00:00Z";
    f.pin = RuntimePin{i, img('a'), hash(char('0' + i))};
    releases.push_back(f);
  }
  RevisionsPlan p = planRevisions(input(recorded, 6, pair(img('a'), hash('6')), releases, 2));
  EXPECT_EQ(numbered(p, 4).pinnedBy, (std::vector<std::string>{"ci4"}));
  EXPECT_EQ(numbered(p, 3).pinnedBy, (std::vector<std::string>{"ci3"}));
  for (int64_t old : {1, 2}) {
    const auto it = std::find_if(p.revisions.begin(), p.revisions.end(),
                                 [&](const RuntimeRevision& r) { return r.number == old; });
    EXPECT_TRUE(it == p.revisions.end() || !it->pinned()) << "revision " << old;
  }
  // Limit 2 keeps 2 unpinned besides the current and the pinned: 5 and 2 stay, 1 goes.
  EXPECT_EQ(numbers(p.pruned), (std::vector<int64_t>{1}));

  // Another model's validations and a release being deleted do not count towards gpt2's.
  ReleasePinFacts bert = release("b1", "Validated", hash('5'), "bert");
  bert.validatedAt = "2026-11-09T00:00:00Z";
  ReleasePinFacts gone = release("ci9", "Validated", hash('5'));
  gone.validatedAt = "2026-11-09T00:00:00Z";
  gone.deleting = true;
  releases.push_back(bert);
  releases.push_back(gone);
  RevisionsPlan q = planRevisions(input(recorded, 6, pair(img('a'), hash('6')), releases, 2));
  EXPECT_EQ(numbered(q, 3).pinnedBy, (std::vector<std::string>{"ci3"}));
  EXPECT_EQ(numbered(q, 4).pinnedBy, (std::vector<std::string>{"ci4"}));
  EXPECT_EQ(numbered(q, 5).pinnedBy, (std::vector<std::string>{"b1"}));

  // In a gate, the canary or Promoted, a release pins whatever the validations.
  releases.push_back(release("t1", "Testing", hash('1')));
  RevisionsPlan r = planRevisions(input(recorded, 6, pair(img('a'), hash('6')), releases, 2));
  EXPECT_EQ(numbered(r, 1).pinnedBy, (std::vector<std::string>{"t1"}));
}

TEST(PlanRevisions, PrunesUnpinnedRevisionsBeyondTheLimit) {
  struct Case {
    std::string name;
    int64_t limit;
    int64_t current;
    std::vector<std::string> pinnedHashes;  // releases in a gate on these hashes
    std::vector<int64_t> wantKept;
    std::vector<int64_t> wantPruned;
  };
  // Recorded: 1..6, hash '1'..'6'.
  const std::vector<Case> cases = {
      {"limit 4 keeps all but the oldest", 4, 6, {}, {2, 3, 4, 5, 6}, {1}},
      {"limit 5 keeps all six", 5, 6, {}, {1, 2, 3, 4, 5, 6}, {}},
      {"limit 2 keeps the current and two more", 2, 6, {}, {4, 5, 6}, {1, 2, 3}},
      {"limit 0 keeps the current only", 0, 6, {}, {6}, {1, 2, 3, 4, 5}},
      {"pinned revisions are kept whatever the limit", 0, 6, {"1", "3"}, {1, 3, 6}, {2, 4, 5}},
      {"a restored old current keeps the highest number too", 0, 2, {}, {2, 6}, {1, 3, 4, 5}},
      {"pinned revisions do not use up the limit", 1, 6, {"5"}, {4, 5, 6}, {1, 2, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<RuntimeRevision> recorded;
    for (int i = 1; i <= 6; ++i) recorded.push_back(rev(i, img('a'), hash(char('0' + i))));
    std::vector<ReleasePinFacts> releases;
    for (const auto& h : c.pinnedHashes)
      releases.push_back(release("r" + h, "Testing", hash(h[0])));
    RevisionsPlan p = planRevisions(
        input(recorded, c.current, pair(img('a'), hash(char('0' + c.current))), releases, c.limit));
    EXPECT_EQ(numbers(p.revisions), c.wantKept);
    EXPECT_EQ(numbers(p.pruned), c.wantPruned);
    EXPECT_EQ(p.currentRevision, c.current);
  }
}

TEST(PlanRevisions, NumbersAreNeverReusedAfterPruning) {
  // 1 current again (restored), 2 pruned by limit 0: the highest, 3, stays, so the next is 4.
  std::vector<RuntimeRevision> recorded = {rev(1, img('a'), hash('1')), rev(2, img('a'), hash('2')),
                                           rev(3, img('a'), hash('3'))};
  RevisionsPlan p = planRevisions(input(recorded, 3, pair(img('a'), hash('1')), {}, 0));
  EXPECT_EQ(numbers(p.revisions), (std::vector<int64_t>{1, 3}));
  RevisionsInput next = input(p.revisions, p.currentRevision, pair(img('c'), hash('9')), {}, 0);
  RevisionsPlan q = planRevisions(next);
  EXPECT_EQ(q.created, 4);
}

TEST(PlanRevisions, APinOnAPrunedPairHoldsNothing) {
  ReleasePinFacts v1 = promoted("v1", "Promoted", hash('1'), kT0);
  v1.pin = RuntimePin{1, img('z'), hash('1')};  // its pair is not recorded (pruned)
  RevisionsPlan p =
      planRevisions(input({rev(2, img('a'), hash('2'))}, 2, pair(img('a'), hash('2')), {v1}));
  ASSERT_EQ(p.pins.size(), 1u);
  EXPECT_EQ(p.pins[0].revision, 0);
  EXPECT_EQ(p.pinnedCount(), 0);
  EXPECT_EQ(p.describePins(), "v1 (a pruned revision, promoted)");
}

// Pins come from what prod runs (issue 28): a Promoted release deleted since
// (a prune, `kubectl delete`) leaves its pair pinned by the Model's record,
// under the release name its stable pods carry, so a lock edit does not leave
// them unadmissible; the RuntimeEnv says which Model holds it.
// What advisory matching needs of a closure is kept with its revision: set from the
// resolution (also on a revision recorded without it), and within a total budget the
// current and pinned revisions keep theirs before the others.
TEST(PlanRevisions, TheResolutionsPackagesAreKeptWithinABudgetPinnedFirst) {
  ResolvedPair resolved = pair(img('a'), hash('1'));
  resolved.packages = "pypi idna 3.4\n";
  RevisionsPlan p = planRevisions(input({}, 0, resolved));
  EXPECT_EQ(p.revisions[0].packages, "pypi idna 3.4\n");
  // Recorded before packages were kept: the resolution fills them in.
  RevisionsPlan old = planRevisions(input({rev(1, img('a'), hash('1'))}, 1, resolved));
  EXPECT_EQ(numbered(old, 1).packages, "pypi idna 3.4\n");

  const std::string big(100 << 10, 'x');  // 100 KiB each: three fit in the 256 KiB
  std::vector<RuntimeRevision> recorded;
  for (int64_t n = 1; n <= 4; ++n) {
    RuntimeRevision r = rev(n, img('a'), hash(static_cast<char>('0' + n)));
    r.packages = big;
    recorded.push_back(r);
  }
  ResolvedPair current = pair(img('a'), hash('5'));
  current.packages = big;
  // v1 pins revision 1, the oldest: it keeps its packages; of the unpinned, only the
  // current (5) does; 2, 3 and 4 lose theirs.
  ReleasePinFacts v1 = release("v1", "Promoted", hash('1'));
  v1.pin = RuntimePin{1, img('a'), hash('1')};
  RevisionsPlan budget = planRevisions(input(recorded, 4, current, {v1}));
  EXPECT_EQ(numbered(budget, 1).packages.size(), big.size());
  EXPECT_EQ(numbered(budget, 5).packages.size(), big.size());
  EXPECT_TRUE(numbered(budget, 4).packages.empty());
  EXPECT_TRUE(numbered(budget, 3).packages.empty());
  EXPECT_TRUE(numbered(budget, 2).packages.empty());
  size_t total = 0;
  for (const RuntimeRevision& r : budget.revisions) total += r.packages.size();
  EXPECT_LE(total, kMaxRevisionPackagesTotal);
}

TEST(PlanRevisions, TheModelsRecordOfProdPinsWithoutAnyReleaseObject) {
  using api::v1alpha1::ModelPin;
  using api::v1alpha1::ModelPinHold;
  std::vector<RuntimeRevision> recorded = {rev(1, img('a'), hash('1')),
                                           rev(2, img('a'), hash('2'))};
  ModelPin prod{"gpt2", "v1", "torch", RuntimePin{1, img('a'), hash('1')}, ModelPinHold::kProd};
  RevisionsInput in = input(recorded, 2, pair(img('a'), hash('2')), {}, 0);
  // Without the Model's pin, revision 1 is unpinned and pruned (limit 0).
  RevisionsPlan without = planRevisions(in);
  EXPECT_EQ(numbers(without.revisions), (std::vector<int64_t>{2}));
  in.models = {prod};
  RevisionsPlan p = planRevisions(in);
  EXPECT_EQ(numbers(p.revisions), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(numbered(p, 1).pinnedBy, (std::vector<std::string>{"v1"}));
  EXPECT_EQ(p.describePins(), "v1 (revision 1, Model gpt2's prod)");
  EXPECT_TRUE(p.anyPinned()) << "the RuntimeEnv stays in use while prod runs on it";
  // Another RuntimeEnv's pair, or a pair without an image (adopted from an
  // anchor), holds nothing here.
  in.models = {
      ModelPin{"gpt2", "v1", "other", prod.pair, ModelPinHold::kProd},
      ModelPin{"gpt2", "v0", "torch", RuntimePin{0, "", hash('1')}, ModelPinHold::kRollbackTarget}};
  EXPECT_EQ(planRevisions(in).pinnedCount(), 0);
  EXPECT_FALSE(planRevisions(in).anyPinned());
  // A live release holding the same revision is not named twice.
  ReleasePinFacts v1 = promoted("v1", "Promoted", hash('1'), kT0);
  v1.pin = RuntimePin{1, img('a'), hash('1')};
  in.releases = {v1};
  in.models = {prod};
  RevisionsPlan both = planRevisions(in);
  EXPECT_EQ(both.pins.size(), 1u);
  EXPECT_TRUE(both.modelPins.empty());
  EXPECT_EQ(both.describePins(), "v1 (revision 1, promoted)");
}

// Thousands of models in prod on one revision (the promotion benchmark's 10,000 at
// rest): the status lists the first kMaxPinnedByListed names and counts all, instead
// of a write the CRD's maxItems refuses at every reconcile.
TEST(PlanRevisions, PinsPastTheListedBoundAreCountedAndTheFirstListed) {
  using api::v1alpha1::kMaxPinnedByListed;
  using api::v1alpha1::ModelPin;
  using api::v1alpha1::ModelPinHold;
  std::vector<RuntimeRevision> recorded = {rev(1, img('a'), hash('1')),
                                           rev(2, img('a'), hash('2'))};
  RevisionsInput in = input(recorded, 2, pair(img('a'), hash('2')), {}, 0);
  const size_t models = kMaxPinnedByListed + 6;
  for (size_t i = 0; i < models; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "m%05zu-v1", i);
    in.models.push_back(ModelPin{"m" + std::to_string(i), name, "torch",
                                 RuntimePin{1, img('a'), hash('1')}, ModelPinHold::kProd});
  }
  RevisionsPlan p = planRevisions(in);
  const RuntimeRevision& one = numbered(p, 1);
  ASSERT_EQ(one.pinnedBy.size(), kMaxPinnedByListed);
  EXPECT_EQ(one.pinnedBy.front(), "m00000-v1");
  EXPECT_EQ(one.pinnedBy.back(), "m01023-v1") << "the first names in order";
  EXPECT_EQ(one.pinnedByCount, static_cast<int64_t>(models));
  ASSERT_EQ(p.truncatedPins.size(), 1u);
  EXPECT_EQ(p.truncatedPins[0].revision, 1);
  EXPECT_EQ(p.truncatedPins[0].pins, static_cast<int64_t>(models));
  EXPECT_TRUE(p.truncatedPins[0].newly);
  EXPECT_TRUE(p.anyPinned());
  // Encoded with its count, decoded back; the next plan over that status is not new.
  const RuntimeRevision back = api::v1alpha1::decodeRevision(api::v1alpha1::encodeRevision(one));
  EXPECT_EQ(back.pinnedByCount, static_cast<int64_t>(models));
  EXPECT_EQ(back.pinnedBy.size(), kMaxPinnedByListed);
  in.recorded = p.revisions;
  RevisionsPlan again = planRevisions(in);
  ASSERT_EQ(again.truncatedPins.size(), 1u);
  EXPECT_FALSE(again.truncatedPins[0].newly);
  // Back under the bound: listed whole, no count written.
  in.recorded = again.revisions;
  in.models.resize(3);
  RevisionsPlan fewer = planRevisions(in);
  EXPECT_EQ(numbered(fewer, 1).pinnedBy.size(), 3u);
  EXPECT_EQ(numbered(fewer, 1).pinnedByCount, 0);
  EXPECT_TRUE(fewer.truncatedPins.empty());
  EXPECT_FALSE(api::v1alpha1::encodeRevision(numbered(fewer, 1)).contains("pinnedByCount"));
}

TEST(ReleasePinFacts, DecodesTheReleaseObject) {
  nlohmann::json mr = {
      {"metadata", {{"name", "v1"}, {"namespace", "ml"}}},
      {"spec",
       {{"model", "gpt2"}, {"runtimeEnvRef", {{"name", "torch"}}}, {"closureHash", hash('1')}}},
      {"status",
       {{"phase", "Superseded"},
        {"canary", {{"phase", "Promoted"}, {"finishedAt", "2026-11-03T00:00:00Z"}}},
        {"stages", {{{"name", "eval"}, {"finishedAt", "2026-11-01T00:00:00Z"}}}},
        {"rollback", {{"at", "2026-11-05T00:00:00Z"}}},
        {"runtime", {{"revision", 2}, {"image", img('a')}, {"closureHash", hash('1')}}}}}};
  ReleasePinFacts f = api::v1alpha1::releasePinFacts(mr);
  EXPECT_EQ(f.name, "v1");
  EXPECT_EQ(f.model, "gpt2");
  EXPECT_EQ(f.runtimeEnv, "torch");
  EXPECT_EQ(f.phase, "Superseded");
  EXPECT_TRUE(f.promotedOnce);
  EXPECT_EQ(f.lastProdAt, "2026-11-05T00:00:00Z");
  ASSERT_TRUE(f.pin.has_value());
  EXPECT_EQ(f.pin->revision, 2);
  EXPECT_EQ(f.pin->image, img('a'));
  EXPECT_FALSE(f.deleting);
  mr["metadata"]["deletionTimestamp"] = kT2;
  mr["status"].erase("runtime");
  f = api::v1alpha1::releasePinFacts(mr);
  EXPECT_TRUE(f.deleting);
  EXPECT_FALSE(f.pin.has_value());

  // Without the rollback: the canary's end is the last time prod ran it.
  mr["status"].erase("rollback");
  EXPECT_EQ(api::v1alpha1::releasePinFacts(mr).lastProdAt, "2026-11-03T00:00:00Z");
  // A canary that rolled back: never prod.
  mr["status"]["canary"] = {{"phase", "RolledBack"}, {"step", 1}};
  EXPECT_FALSE(api::v1alpha1::releasePinFacts(mr).promotedOnce);
  // Unreadable (canary_status.h): it cannot show prod never ran it, so it is
  // held as one prod did; its stages give the time.
  mr["status"]["canary"]["step"] = "1";
  f = api::v1alpha1::releasePinFacts(mr);
  EXPECT_TRUE(f.promotedOnce);
  EXPECT_EQ(f.lastProdAt, "2026-11-01T00:00:00Z");
}

}  // namespace
}  // namespace lockstep::controllers
