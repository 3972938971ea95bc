// A RuntimeEnv's advisories (controllers/runtimeenv/runtimeenv_advisories.h) through the
// planner, with real OSV records (tests/advisories/testdata/osv) and a real lock
// (sigstore/model-transparency's torch 2.1 pip lock, which has jinja2 3.1.2).
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "advisories/osv_export.h"
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

RuntimeEnvObserved observed(const json& rte, std::shared_ptr<const advisories::AdvisoryIndex> idx,
                            const std::vector<json>& releases = {}) {
  RuntimeEnvObserved o;
  o.runtimeEnv = testing::share(rte);
  for (const json& r : releases) o.releases.push_back(testing::share(r));
  o.advisories = std::move(idx);
  o.advisorySource = "osv: 13 records";
  return o;
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
  json v1 = testing::modelRelease("v1")
                .runtimeEnv("torch")
                .closureHash(first.status["closureHash"])
                .build();
  v1["spec"]["model"] = "gpt2";
  v1["status"] = {
      {"phase", "Promoted"},
      {"canary", {{"phase", "Promoted"}}},
      {"runtime",
       {{"revision", 1}, {"image", kImage}, {"closureHash", first.status["closureHash"]}}}};
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
  EXPECT_FALSE(planRuntimeEnv(observed(rte, nullptr), kNow).status.contains("advisories"));
  rte["spec"]["lock"]["inline"] = "this is not a lock ===";
  RuntimeEnvPlan broken = planRuntimeEnv(observed(rte, idx), kNow);
  EXPECT_EQ(broken.status["advisories"], first.status["advisories"]);
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
