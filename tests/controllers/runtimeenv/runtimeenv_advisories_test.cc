// A RuntimeEnv's advisories (controllers/runtimeenv/runtimeenv_advisories.h) through the
// planner, with real OSV records (tests/advisories/testdata/osv) and a real lock
// (sigstore/model-transparency's torch 2.1 pip lock, which has jinja2 3.1.2).
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "advisories/name_mapping.h"
#include "advisories/osv_export.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/runtimeenv/runtimeenv_advisories.h"
#include "controllers/runtimeenv/runtimeenv_plan.h"
#include "tests/support/builders.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

const std::string kImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kNow = "2026-12-03T10:00:00Z";

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<const advisories::AdvisoryIndex> realRecords() {
  auto loaded = advisories::loadOsvExport(std::string(LOCKSTEP_SOURCE_DIR) +
                                          "/tests/advisories/testdata/osv");
  EXPECT_TRUE(loaded.isOk()) << loaded.status().toString();
  return std::make_shared<const advisories::AdvisoryIndex>(std::move(loaded->index));
}

std::string torchLock() {
  return readFile(std::string(LOCKSTEP_SOURCE_DIR) +
                  "/tests/closure/testdata/lockfiles/pip/"
                  "torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt");
}

std::string cleanLock() {
  return readFile(std::string(LOCKSTEP_SOURCE_DIR) +
                  "/tests/closure/testdata/lockfiles/pip/"
                  "requests-only-mozilla-translations-splitter.requirements.txt");
}

// A local export's snapshot (null index: no source).
std::shared_ptr<const AdvisorySnapshot> exportOf(
    std::shared_ptr<const advisories::AdvisoryIndex> idx) {
  if (!idx) return nullptr;
  auto s = std::make_shared<AdvisorySnapshot>();
  s->source = "osv: 13 records";
  s->index = std::move(idx);
  return s;
}

RuntimeEnvObserved observed(const json& rte, std::shared_ptr<const AdvisorySnapshot> source,
                            const std::vector<json>& releases = {}, int64_t nowUnix = 1000) {
  RuntimeEnvObserved o;
  o.runtimeEnv = testing::share(rte);
  for (const json& r : releases) o.releases.push_back(testing::share(r));
  o.advisories = std::move(source);
  o.nowUnix = nowUnix;
  return o;
}

RuntimeEnvObserved observed(const json& rte, std::shared_ptr<const advisories::AdvisoryIndex> idx,
                            const std::vector<json>& releases = {}) {
  return observed(rte, exportOf(std::move(idx)), releases);
}

// A release of model gpt2 in prod on `revision`.
json prodRelease(const std::string& name, int64_t revision, const json& hash) {
  json r = testing::modelRelease(name).runtimeEnv("torch").closureHash(hash).build();
  r["spec"]["model"] = "gpt2";
  r["status"] = {{"phase", "Promoted"},
                 {"canary", {{"phase", "Promoted"}}},
                 {"runtime", {{"revision", revision}, {"image", kImage}, {"closureHash", hash}}}};
  return r;
}

const json* revisionEntry(const json& advisories, int64_t revision) {
  if (!advisories.contains("revisions")) return nullptr;
  for (const json& e : advisories["revisions"])
    if (e["revision"] == revision) return &e;
  return nullptr;
}

const json* item(const json& advisories, const std::string& id) {
  for (const json& a : advisories["items"])
    if (a["id"] == id) return &a;
  return nullptr;
}

TEST(RuntimeEnvAdvisories, TheCurrentClosuresAdvisoriesAreInStatusWithAnEventOnce) {
  auto idx = realRecords();
  json rte = testing::runtimeEnv("torch").image(kImage).inlineLock(torchLock()).build();
  RuntimeEnvPlan first = planRuntimeEnv(observed(rte, idx), kNow);
  ASSERT_TRUE(first.status.contains("advisories")) << first.status.dump(2);
  const json& a = first.status["advisories"];
  EXPECT_EQ(a["source"], "osv: 13 records");
  EXPECT_EQ(a["revision"], 1);
  EXPECT_EQ(a["closureHash"], first.status["closureHash"]);
  const json* jinja = item(a, "GHSA-h5c8-rqwp-cp95");
  ASSERT_NE(jinja, nullptr) << a.dump(2);
  EXPECT_EQ((*jinja)["package"], "jinja2");
  EXPECT_EQ((*jinja)["version"], "3.1.2");
  EXPECT_EQ((*jinja)["fixed"], "3.1.3");
  const json* idna = item(a, "GHSA-jjg7-2v4v-x38h");
  ASSERT_NE(idna, nullptr) << a.dump(2);
  EXPECT_EQ((*idna)["severity"], "high");
  EXPECT_EQ(a["count"].get<size_t>(), a["items"].size());
  EXPECT_EQ(a["highest"], a["items"][0]["severity"]);
  // Unpinned: a Normal Event naming them.
  bool found = false;
  for (const RuntimeEnvEvent& e : first.events) {
    if (e.reason == kReasonAdvisoriesFound) {
      found = true;
      EXPECT_EQ(e.type, "Normal");
      EXPECT_NE(e.message.find("GHSA-h5c8-rqwp-cp95 (jinja2 3.1.2"), std::string::npos)
          << e.message;
    }
  }
  EXPECT_TRUE(found);
  // The same status again: no Event, no change.
  rte["status"] = first.status;
  RuntimeEnvPlan again = planRuntimeEnv(observed(rte, idx), kNow);
  for (const RuntimeEnvEvent& e : again.events) EXPECT_NE(e.reason, kReasonAdvisoriesFound);
  EXPECT_FALSE(again.statusChanged);
}

TEST(RuntimeEnvAdvisories, ANewAdvisoryOfAPinnedRevisionIsAWarning) {
  auto idx = realRecords();
  json rte = testing::runtimeEnv("torch").image(kImage).inlineLock(torchLock()).build();
  RuntimeEnvPlan first = planRuntimeEnv(observed(rte, idx), kNow);
  // Yesterday's export knew one advisory fewer; v1 is in prod on this revision.
  json status = first.status;
  json& items = status["advisories"]["items"];
  for (auto it = items.begin(); it != items.end(); ++it) {
    if ((*it)["id"] == "GHSA-h5c8-rqwp-cp95") {
      items.erase(it);
      break;
    }
  }
  rte["status"] = status;
  json v1 = prodRelease("v1", 1, first.status["closureHash"]);
  RuntimeEnvPlan plan = planRuntimeEnv(observed(rte, idx, {v1}), kNow);
  int warnings = 0;
  for (const RuntimeEnvEvent& e : plan.events) {
    if (e.reason != kReasonAdvisoryPublished) continue;
    ++warnings;
    EXPECT_EQ(e.type, "Warning");
    EXPECT_NE(e.message.find("1 new advisory(ies): GHSA-h5c8-rqwp-cp95 (jinja2 3.1.2, "),
              std::string::npos)
        << e.message;
  }
  EXPECT_EQ(warnings, 1);
}

TEST(RuntimeEnvAdvisories, NoSourceRemovesThemAndAnUnresolvableLockKeepsTheLastMatch) {
  auto idx = realRecords();
  json rte = testing::runtimeEnv("torch").image(kImage).inlineLock(torchLock()).build();
  RuntimeEnvPlan first = planRuntimeEnv(observed(rte, idx), kNow);
  rte["status"] = first.status;
  EXPECT_FALSE(
      planRuntimeEnv(observed(rte, std::shared_ptr<const advisories::AdvisoryIndex>()), kNow)
          .status.contains("advisories"));
  rte["spec"]["lock"]["inline"] = "this is not a lock ===";
  RuntimeEnvPlan broken = planRuntimeEnv(observed(rte, idx), kNow);
  EXPECT_EQ(broken.status["advisories"], first.status["advisories"]);
}

TEST(AdvisoryPackages, KeepWhatMatchingNeedsAndRoundTrip) {
  const std::string store =
      "/nix/store/00000000000000000000000000000000-python3.11-requests-2.31.0";
  std::vector<closure::Package> packages = {
      {"pypi", "jinja2", "3.1.2", {"sha256:aa"}},
      {"conda", "openssl", "3.1.4", {"sha256:bb"}},
      {"nix",
       "python3.11-requests",
       "2.31.0",
       {"/nix/store/11111111111111111111111111111111-openssl-3.0", store}},
  };
  auto text = encodeAdvisoryPackages(packages);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "pypi jinja2 3.1.2\nconda openssl 3.1.4\nnix python3.11-requests 2.31.0 " +
                       store + "\n");
  auto back = decodeAdvisoryPackages(*text);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_EQ(back->size(), 3u);
  // What matching reads is the same: names, versions and the Nix store path.
  for (size_t i = 0; i < packages.size(); ++i) {
    auto want = advisories::osvPackageFor(packages[i]);
    auto got = advisories::osvPackageFor((*back)[i]);
    EXPECT_EQ(want.matched, got.matched) << i;
    EXPECT_EQ(want.ref.name, got.ref.name) << i;
    EXPECT_EQ(want.ref.version, got.ref.version) << i;
    EXPECT_EQ(want.reason, got.reason) << i;
  }
  // Bounded, and nothing ambiguous is stored.
  std::vector<closure::Package> many;
  for (int i = 0; i < 3000; ++i)
    many.push_back({"pypi", "package-" + std::to_string(i), "1.0.0", {}});
  EXPECT_FALSE(encodeAdvisoryPackages(many).has_value());
  EXPECT_FALSE(encodeAdvisoryPackages({{"pypi", "a b", "1", {}}}).has_value());
  auto bad = decodeAdvisoryPackages("pypi a 1\npypi b\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("packages line 2"), std::string::npos);
}

// A release pins revision 1 (torch 2.1, five advisories); the lock moves on to a clean
// one (revision 2): status lists both, the release's revision from what revision 1 kept.
TEST(RuntimeEnvAdvisories, APinnedRevisionIsMatchedFromItsStoredClosureAfterTheLockMoved) {
  auto idx = realRecords();
  json rte = testing::runtimeEnv("torch").image(kImage).inlineLock(torchLock()).build();
  RuntimeEnvPlan first = planRuntimeEnv(observed(rte, idx), kNow);
  ASSERT_FALSE(first.status["revisions"][0].value("packages", "").empty())
      << "revision 1 keeps its closure for advisories";
  const json hash1 = first.status["closureHash"];
  rte["status"] = first.status;
  json v1 = prodRelease("v1", 1, hash1);
  rte["spec"]["lock"]["inline"] = cleanLock();
  RuntimeEnvPlan moved = planRuntimeEnv(observed(rte, idx, {v1}), kNow);
  const json& a = moved.status["advisories"];
  EXPECT_EQ(a["revision"], 2) << a.dump(2);
  EXPECT_EQ(a["count"], 0);
  const json* r1 = revisionEntry(a, 1);
  ASSERT_NE(r1, nullptr) << a.dump(2);
  EXPECT_EQ((*r1)["closureHash"], hash1);
  EXPECT_EQ((*r1)["count"], 5);
  EXPECT_EQ((*r1)["highest"], "high");
  EXPECT_FALSE(r1->contains("current"));
  EXPECT_NE(item(*r1, "GHSA-h5c8-rqwp-cp95"), nullptr);
  const json* r2 = revisionEntry(a, 2);
  ASSERT_NE(r2, nullptr);
  EXPECT_EQ((*r2)["current"], true);
  EXPECT_EQ((*r2)["count"], 0);
  EXPECT_EQ(api::v1alpha1::advisoriesOfRevision(a, 1)["count"], 5);
  EXPECT_EQ(api::v1alpha1::advisoriesOfRevision(a, 2)["count"], 0);
  // The pinned revision's five count in the pinned metric; no Event: they were known.
  EXPECT_EQ(moved.pinnedAdvisories.value("high", 0) + moved.pinnedAdvisories.value("medium", 0), 5)
      << moved.pinnedAdvisories.dump();
  for (const RuntimeEnvEvent& e : moved.events) {
    EXPECT_NE(e.reason, kReasonAdvisoryPublished) << e.message;
    EXPECT_NE(e.reason, kReasonAdvisoriesFound) << e.message;
  }
  // A status from before revisions[] (yesterday's export knew one fewer): a Warning for
  // the pinned revision, naming the new one.
  rte["status"] = moved.status;
  json older = moved.status["advisories"];
  older.erase("revisions");
  json r1Older = *r1;
  r1Older["items"].erase(r1Older["items"].begin());
  older["revisions"] = json::array({r1Older});
  rte["status"]["advisories"] = older;
  RuntimeEnvPlan again = planRuntimeEnv(observed(rte, idx, {v1}), kNow);
  int warnings = 0;
  for (const RuntimeEnvEvent& e : again.events) {
    if (e.reason != kReasonAdvisoryPublished) continue;
    ++warnings;
    EXPECT_NE(e.message.find("revision 1, which releases or prod run"), std::string::npos)
        << e.message;
  }
  EXPECT_EQ(warnings, 1);
}

TEST(RuntimeEnvAdvisories, APinnedRevisionRecordedWithoutItsClosureIsNotKnownNeverClean) {
  auto idx = realRecords();
  json rte = testing::runtimeEnv("torch").image(kImage).inlineLock(torchLock()).build();
  RuntimeEnvPlan first = planRuntimeEnv(observed(rte, idx), kNow);
  rte["status"] = first.status;
  rte["status"]["revisions"][0].erase("packages");  // recorded by an older operator
  rte["status"].erase("advisories");
  json v1 = prodRelease("v1", 1, first.status["closureHash"]);
  rte["spec"]["lock"]["inline"] = cleanLock();
  RuntimeEnvPlan plan = planRuntimeEnv(observed(rte, idx, {v1}), kNow);
  const json* r1 = revisionEntry(plan.status["advisories"], 1);
  ASSERT_NE(r1, nullptr) << plan.status["advisories"].dump(2);
  EXPECT_EQ((*r1)["known"], false);
  EXPECT_FALSE(r1->contains("count"));
  EXPECT_NE((*r1)["reason"].get<std::string>().find("its advisories are not known"),
            std::string::npos);
}

// The endpoint's snapshot: a closure with no answer is asked about; an answer is
// matched; a failed lookup keeps the last good answer and says what was wrong.
TEST(RuntimeEnvAdvisories, AnEndpointsAnswersAreAskedForMatchedAndKeptOnFailure) {
  auto idx = realRecords();
  json rte = testing::runtimeEnv("torch").image(kImage).inlineLock(torchLock()).build();
  auto source = std::make_shared<AdvisorySnapshot>();
  source->source = "https://osv.example (OSV API)";
  source->endpoint = true;
  source->refreshSeconds = 600;
  source->retrySeconds = 60;
  RuntimeEnvPlan waiting = planRuntimeEnv(observed(rte, source, {}, 1000), kNow);
  const std::string hash = waiting.status["closureHash"];
  ASSERT_EQ(waiting.advisoryLookups.size(), 1u);
  EXPECT_EQ(waiting.advisoryLookups[0].closureHash, hash);
  EXPECT_EQ(waiting.advisoryLookups[0].packages.size(), 78u);
  EXPECT_EQ(waiting.status["advisories"]["known"], false);
  EXPECT_EQ(waiting.status["advisories"]["reason"], "waiting for the OSV endpoint's first answer");

  AdvisoryAnswer answer;
  answer.index = idx;
  answer.checkedAt = "2026-12-03T09:59:00Z";
  answer.checkedAtUnix = 990;
  answer.attemptedAtUnix = 990;
  source->byClosure[hash] = answer;
  rte["status"] = waiting.status;
  RuntimeEnvPlan answered = planRuntimeEnv(observed(rte, source, {}, 1000), kNow);
  const json& a = answered.status["advisories"];
  EXPECT_EQ(a["count"], 5) << a.dump(2);
  EXPECT_EQ(a["checkedAt"], "2026-12-03T09:59:00Z");
  EXPECT_FALSE(a.contains("known"));
  EXPECT_FALSE(a.contains("error"));
  EXPECT_TRUE(answered.advisoryLookups.empty()) << "not due before checkedAt + refresh";
  EXPECT_EQ(answered.advisoryRequeueSeconds, 590);
  // Due again: asked again, the last answer still shown.
  RuntimeEnvPlan due = planRuntimeEnv(observed(rte, source, {}, 1600), kNow);
  EXPECT_EQ(due.advisoryLookups.size(), 1u);
  EXPECT_EQ(due.status["advisories"]["count"], 5);

  // The endpoint went down: the last good answer stays, with the error.
  rte["status"] = answered.status;
  source->byClosure[hash].error = "https://osv.example/v1/querybatch: unreachable: refused";
  source->byClosure[hash].attemptedAtUnix = 1500;
  RuntimeEnvPlan down = planRuntimeEnv(observed(rte, source, {}, 1520), kNow);
  EXPECT_EQ(down.status["advisories"]["count"], 5);
  EXPECT_EQ(down.status["advisories"]["error"],
            "https://osv.example/v1/querybatch: unreachable: refused");
  EXPECT_TRUE(down.advisoryLookups.empty()) << "retried after retrySeconds";
  EXPECT_EQ(down.advisoryRequeueSeconds, 40);
  // An operator restarted while it is down has no answer at all: the status keeps the
  // last match of the same closure, with the error, rather than "not known".
  auto restarted = std::make_shared<AdvisorySnapshot>(*source);
  restarted->byClosure[hash].index = nullptr;
  RuntimeEnvPlan kept = planRuntimeEnv(observed(rte, restarted, {}, 1520), kNow);
  EXPECT_EQ(kept.status["advisories"]["count"], 5) << kept.status["advisories"].dump(2);
  EXPECT_EQ(kept.status["advisories"]["error"],
            "https://osv.example/v1/querybatch: unreachable: refused");
}

TEST(AdvisoryStatus, PastTheItemLimitCountsAreWholeAndTruncatedSaysHowMany) {
  advisories::AdvisoryReport report;
  for (int i = 0; i < 105; ++i) {
    advisories::Finding f;
    f.id = "GHSA-" + std::to_string(1000 + i);
    f.package = {"pypi", "pkg" + std::to_string(i), "1.0", {}};
    f.severity.severity = i == 104 ? advisories::Severity::kCritical : advisories::Severity::kLow;
    report.findings.push_back(std::move(f));
  }
  json s = advisoryStatus(report, 3, "sha256:x", "src");
  EXPECT_EQ(s["count"], 105);
  EXPECT_EQ(s["items"].size(), kMaxAdvisoryItems);
  EXPECT_EQ(s["truncated"], 5);
  EXPECT_EQ(s["highest"], "critical");
  EXPECT_EQ(s["items"][0]["id"], "GHSA-1104") << "the most severe first";
  EXPECT_EQ(s["bySeverity"]["low"], 104);
  EXPECT_EQ(s["bySeverity"]["critical"], 1);
}

}  // namespace
}  // namespace lockstep::controllers
