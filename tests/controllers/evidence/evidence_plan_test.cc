// The statements a release's status warrants, and their status: pure.
#include "controllers/evidence/evidence_plan.h"

#include <gtest/gtest.h>

#include "closure/closure.h"
#include "evidence/statement.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kHash = "sha256:" + std::string(64, 'c');
const std::string kSpecDigest = "sha256:" + std::string(64, 'd');

json evalStage() {
  return {{"name", "eval"},
          {"approval", "Manual"},
          {"gate", {{"metrics", json::array({{{"name", "accuracy"}, {"min", 0.8}}})}}}};
}

json release() {
  return {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", "v1"}, {"namespace", "ml"}, {"uid", "u-1"}, {"generation", 1}}},
      {"spec",
       {{"model", "gpt2"},
        {"package", "registry.example/models/gpt2@" + kDigest},
        {"stages", json::array({evalStage(),
                                {{"name", "prod"},
                                 {"serving", json::object()},
                                 {"canary", {{"steps", json::array({{{"weight", 50}}})}}}}})}}},
      {"status",
       {{"runtime",
         {{"revision", 3}, {"image", "registry.example/rt@" + kDigest}, {"closureHash", kHash}}},
        {"stages", json::array({{{"name", "eval"},
                                 {"phase", "Succeeded"},
                                 {"startedAt", "2026-12-02T10:00:00Z"},
                                 {"finishedAt", "2026-12-02T10:05:00Z"},
                                 {"approvers", json::array({"alice"})},
                                 {"metrics", {{"accuracy", 0.91}}},
                                 {"evidence",
                                  {{"package", "registry.example/models/gpt2@" + kDigest},
                                   {"closureHash", kHash},
                                   {"image", "registry.example/rt@" + kDigest},
                                   {"jobUID", "job-1"},
                                   {"specDigest", kSpecDigest},
                                   {"command", json::array({"python", "eval.py"})}}}}})}}}};
}

const PlannedStatement* find(const std::vector<PlannedStatement>& v, const std::string& name) {
  for (const auto& p : v)
    if (p.name == name) return &p;
  return nullptr;
}

TEST(EvidencePlan, APassedGateGivesItsTestResultAndADecisionCitingIt) {
  auto planned = plannedStatements(release(), {"east", "0.1.0"});
  ASSERT_TRUE(planned.isOk()) << planned.status().toString();
  ASSERT_EQ(planned->size(), 2u);
  const PlannedStatement* eval = find(*planned, "eval/test-result");
  const PlannedStatement* decision = find(*planned, "eval/decision");
  ASSERT_TRUE(eval && decision);
  EXPECT_EQ(&(*planned)[0], eval) << "the eval statement comes before the decision citing it";
  json e = json::parse(eval->payload);
  EXPECT_EQ(e["predicateType"], evidence::kTestResultPredicate);
  EXPECT_EQ(e["subject"][0]["digest"]["sha256"], std::string(64, 'a'));
  EXPECT_EQ(e["predicate"]["result"], "PASSED");
  EXPECT_EQ(e["predicate"]["configuration"][0]["digest"]["sha256"], std::string(64, 'd'))
      << "the spec digest committed on the Job, not one computed now";
  EXPECT_EQ(e["predicate"]["lockstep"]["gateJob"]["uid"], "job-1");
  EXPECT_EQ(e["predicate"]["lockstep"]["gateJob"]["command"], json({"python", "eval.py"}));
  EXPECT_EQ(e["predicate"]["lockstep"]["metrics"][0]["threshold"], 0.8);
  EXPECT_EQ(eval->digest, evidence::sha256Digest(eval->payload));
  json d = json::parse(decision->payload);
  EXPECT_EQ(d["predicateType"], evidence::kVerificationSummaryPredicate);
  EXPECT_EQ(d["predicate"]["inputAttestations"][0]["digest"]["sha256"], eval->digest.substr(7));
  EXPECT_EQ(d["predicate"]["lockstep"]["approvers"][0]["user"], "alice");
  EXPECT_FALSE(d["predicate"]["lockstep"]["approvers"][0].contains("groups"))
      << "a status naming the approvers only records no groups, not an empty list";
  EXPECT_EQ(d["predicate"]["lockstep"]["revision"], "3");
  EXPECT_EQ(d["predicate"]["timeVerified"], "2026-12-02T10:05:00Z");
  // The same status gives the same bytes: a retry publishes what it meant to.
  auto again = plannedStatements(release(), {"east", "0.1.0"});
  EXPECT_EQ((*again)[0].payload, eval->payload);
  EXPECT_EQ((*again)[1].digest, decision->digest);
}

// Issue 30: the decision records each approver with the groups the status recorded.
TEST(EvidencePlan, TheDecisionRecordsTheApproversWithTheirGroups) {
  json r = release();
  r["status"]["stages"][0]["approvers"] = json::array({"alice", "dave"});
  r["status"]["stages"][0]["approvals"] =
      json::parse(R"([{"user":"alice","groups":["ml-leads","system:authenticated"]},
                      {"user":"dave"}])");
  auto planned = plannedStatements(r, {"east", "0.1.0"});
  ASSERT_TRUE(planned.isOk()) << planned.status().toString();
  const PlannedStatement* decision = find(*planned, "eval/decision");
  ASSERT_NE(decision, nullptr);
  json approvers = json::parse(decision->payload)["predicate"]["lockstep"]["approvers"];
  EXPECT_EQ(approvers,
            json::parse(R"([{"user":"alice","groups":["ml-leads","system:authenticated"]},
                                       {"user":"dave"}])"));
}

TEST(EvidencePlan, NothingBeforeAStageSucceedsAndAFailedStageIsNoEvidence) {
  json r = release();
  r["status"]["stages"][0]["phase"] = "Running";
  EXPECT_TRUE(plannedStatements(r, {})->empty());
  r["status"]["stages"][0]["phase"] = "Failed";
  EXPECT_TRUE(plannedStatements(r, {})->empty());
  r["status"].erase("stages");
  EXPECT_TRUE(plannedStatements(r, {})->empty());
}

TEST(EvidencePlan, AReleaseWithoutARecordedSpecDigestUsesItsSpec) {
  json r = release();
  r["status"]["stages"][0]["evidence"].erase("specDigest");
  auto planned = plannedStatements(r, {});
  ASSERT_TRUE(planned.isOk());
  json e = json::parse((*planned)[0].payload);
  EXPECT_EQ("sha256:" + e["predicate"]["configuration"][0]["digest"]["sha256"].get<std::string>(),
            evidence::stageSpecDigest(evalStage()));
}

TEST(EvidencePlan, TheProdRecordFollowsTheCanarysEndAndCitesTheDecisions) {
  json r = release();
  r["status"]["canary"] = {{"phase", "Promoted"},
                           {"finishedAt", "2026-12-02T11:00:00Z"},
                           {"passedSteps", json::array({{{"step", 0}, {"weight", 50}}})}};
  auto planned = plannedStatements(r, {"east", "0.1.0"});
  ASSERT_TRUE(planned.isOk()) << planned.status().toString();
  ASSERT_EQ(planned->size(), 3u);
  EXPECT_EQ(planned->back().name, "prod/promoted");
  EXPECT_EQ(planned->back().stage, "prod");
  json p = json::parse(planned->back().payload);
  EXPECT_EQ(p["predicateType"], evidence::kProdRecordPredicate);
  EXPECT_EQ(p["predicate"]["outcome"], "Promoted");
  EXPECT_EQ(p["predicate"]["cluster"], "east");
  EXPECT_EQ(p["predicate"]["since"], "2026-12-02T11:00:00Z");
  EXPECT_EQ(p["predicate"]["release"]["uid"], "u-1");
  EXPECT_EQ(p["predicate"]["canarySteps"][0]["weight"], 50);
  EXPECT_EQ(p["predicate"]["inputAttestations"][0]["digest"]["sha256"],
            (*planned)[1].digest.substr(7));
  r["status"]["canary"]["phase"] = "RolledBack";
  r["status"]["canary"]["reason"] = "AnalysisFailed";
  r["status"]["canary"]["step"] = 1;
  r["status"]["canary"]["analysis"] = {
      {"count", 1},
      {"failed", 1},
      {"phase", "Failed"},
      {"measurements", json::array({{{"at", "2026-12-02T11:00:00Z"}, {"value", 0.3}}})}};
  r["status"]["canary"]["knownGood"] = {{"package", "registry.example/models/gpt2@sha256:00"}};
  planned = plannedStatements(r, {"east", "0.1.0"});
  EXPECT_EQ(planned->back().name, "prod/rolled-back");
  json rolledBack = json::parse(planned->back().payload)["predicate"];
  EXPECT_EQ(rolledBack["reason"], "AnalysisFailed");
  EXPECT_EQ(rolledBack["failedStep"]["step"], 1);
  EXPECT_EQ(rolledBack["failedStep"]["analysis"]["measurements"][0]["value"], 0.3);
  EXPECT_FALSE(rolledBack["failedStep"]["analysis"].contains("phase"));
  EXPECT_EQ(rolledBack["restoredPackage"], "registry.example/models/gpt2@sha256:00");
  r["status"]["canary"] = {{"phase", "Promoted"}};  // not finished yet
  EXPECT_EQ(plannedStatements(r, {})->size(), 2u);
}

// The prod record's bytes are those of status.canary as the API server gives
// it back (a measurement of 0.0 written by the operator comes back as the
// integer 0; members a newer operator wrote are kept): read through the typed
// status.canary (api/v1alpha1/canary_status.h) the statement, and so its
// digest, is byte for byte what it was when the JSON was copied as it was.
// A change here republishes every prod record under a new digest.
const char* kPromotedCanary = R"({
  "phase": "Promoted", "capacity": "surge", "step": 1, "promotion": "FullWeight",
  "startedAt": "2026-12-02T10:10:00Z", "finishedAt": "2026-12-02T11:00:00Z",
  "modelUid": "m-1", "futureTop": {"b": 2, "a": [1, 0.5]},
  "knownGood": {"release": "v0", "package": "registry.example/models/gpt2@sha256:00"},
  "passedSteps": [
    {"step": 0, "weight": 25, "startedAt": "2026-12-02T10:10:00Z",
     "weightReachedAt": "2026-12-02T10:12:00Z", "passedAt": "2026-12-02T10:20:00Z",
     "analysis": {"count": 3, "successful": 3, "failed": 0, "errors": 0, "futureCounter": 7}},
    {"step": 1, "weight": 100, "passedAt": "2026-12-02T10:50:00Z", "promotedBy": "alice",
     "futureStep": "x"}]})";

const char* kRolledBackCanary = R"({
  "phase": "RolledBack", "step": 1, "reason": "AnalysisFailed",
  "message": "error-rate 1 > 0.05", "finishedAt": "2026-12-02T11:00:00Z",
  "knownGood": {"release": "v0", "package": "registry.example/models/gpt2@sha256:00",
                "closureHash": "sha256:11", "futureKnown": true},
  "analysis": {"phase": "Failed", "message": "m", "count": 4, "successful": 1, "failed": 2,
               "errors": 1, "consecutiveErrors": 0, "lastWasError": false,
               "measurements": [{"at": "2026-12-02T10:40:00Z", "value": 0},
                                {"at": "2026-12-02T10:45:00Z", "value": 1},
                                {"at": "2026-12-02T10:50:00Z", "value": 0.25},
                                {"at": "2026-12-02T10:55:00Z", "value": -3},
                                {"at": "2026-12-02T10:56:00Z", "value": 1e300},
                                {"at": "2026-12-02T10:58:00Z", "error": "no data", "futureM": 1}]},
  "passedSteps": [{"step": 0, "weight": 25, "analysis": {"count": 3, "successful": 3}}]})";

TEST(EvidencePlan, TheProdRecordsBytesAreThoseOfTheStatusAsTheApiServerGivesIt) {
  json r = release();
  r["status"]["canary"] = json::parse(kPromotedCanary);
  auto promoted = plannedStatements(r, {"east", "0.1.0"});
  ASSERT_TRUE(promoted.isOk()) << promoted.status().toString();
  ASSERT_EQ(promoted->back().name, "prod/promoted");
  EXPECT_EQ(promoted->back().digest,
            "sha256:b749a6875cadffb037d00cde409ee5d7838dca7ebb3e3d383743774c0363b70d")
      << promoted->back().payload;
  r["status"]["canary"] = json::parse(kRolledBackCanary);
  auto rolledBack = plannedStatements(r, {"east", "0.1.0"});
  ASSERT_TRUE(rolledBack.isOk()) << rolledBack.status().toString();
  ASSERT_EQ(rolledBack->back().name, "prod/rolled-back");
  EXPECT_EQ(rolledBack->back().digest,
            "sha256:ccc12c3abffe6c30b1bd1623f8dc549abc85d9fe128ce1c000883af9b8b0415a")
      << rolledBack->back().payload;
  // The integers stay integers, the numbers numbers.
  EXPECT_NE(rolledBack->back().payload.find(R"("value":0})"), std::string::npos);
  EXPECT_NE(rolledBack->back().payload.find(R"("value":0.25})"), std::string::npos);
}

// A status.canary the decoder refuses cannot say whether the canary ended nor
// give the record's bytes: an error naming the member, never a record from defaults.
TEST(EvidencePlan, AnUnreadableCanaryStatusIsAnErrorNamingTheMember) {
  json r = release();
  r["status"]["canary"] = json::parse(kPromotedCanary);
  r["status"]["canary"]["passedSteps"][1]["weight"] = "100";
  auto planned = plannedStatements(r, {"east", "0.1.0"});
  ASSERT_FALSE(planned.isOk());
  EXPECT_EQ(planned.status().message(),
            "prod record: status.canary.passedSteps[1].weight: must be an integer: the canary's "
            "end cannot be read");
}

TEST(EvidencePlan, APackageNotPinnedIsRefusedNamingTheField) {
  json r = release();
  r["spec"]["package"] = "registry.example/models/gpt2:latest";
  auto planned = plannedStatements(r, {});
  ASSERT_FALSE(planned.isOk());
  EXPECT_NE(planned.status().message().find("spec.package"), std::string::npos);
}

closure::Closure twoPackages() {
  const std::string lock = "six==1.16.0 --hash=sha256:" + std::string(64, '1') + "\n" +
                           "numpy==2.1.0 --hash=sha256:" + std::string(64, '2') + "\n";
  closure::ClosureOptions options;
  options.format = closure::LockFormat::kPip;
  auto c = closure::computeClosure(lock, options);
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return *c;
}

TEST(EvidencePlan, TheBomIsDueOnceEveryGatePassedAndDescribesThem) {
  json r = release();
  EXPECT_TRUE(bomDue(r));
  r["status"]["stages"][0]["phase"] = "Running";
  EXPECT_FALSE(bomDue(r));
  r = release();
  r["spec"]["stages"].erase(0);  // a prod stage only: no gate to describe
  EXPECT_FALSE(bomDue(r));

  const closure::Closure c = twoPackages();
  auto bom = bomStatement(release(), c, {"east", "0.1.0"});
  ASSERT_TRUE(bom.isOk()) << bom.status().toString();
  EXPECT_EQ(bom->name, "bom");
  json st = json::parse(bom->payload);
  EXPECT_EQ(st["predicateType"], "https://cyclonedx.org/bom");
  EXPECT_EQ(st["subject"][0]["digest"]["sha256"], std::string(64, 'a'));
  const json& doc = st["predicate"];
  EXPECT_EQ(doc["bomFormat"], "CycloneDX");
  EXPECT_EQ(doc["specVersion"], "1.6");
  EXPECT_EQ(doc["metadata"]["timestamp"], "2026-12-02T10:05:00Z") << "the last gate's end";
  EXPECT_EQ(doc["metadata"]["component"]["type"], "machine-learning-model");
  int libraries = 0;
  for (const json& comp : doc["components"]) libraries += comp["type"] == "library" ? 1 : 0;
  EXPECT_EQ(libraries, 2);
  EXPECT_EQ(doc["formulation"][0]["workflows"][0]["uid"], "job-1");
  EXPECT_EQ(bomStatement(release(), c, {"east", "0.1.0"})->payload, bom->payload)
      << "the same status and closure give the same bytes";
}

TEST(EvidencePlan, TheBomCarriesTheRuntimeEnvsAdvisoriesOfThePinnedRevision) {
  const closure::Closure c = twoPackages();
  const int64_t pinned = release()["status"]["runtime"]["revision"];
  json advisories = {{"revision", pinned},
                     {"items", json::array({{{"id", "GHSA-0000-six"},
                                             {"aliases", {"CVE-2026-0001"}},
                                             {"package", "six"},
                                             {"version", "1.16.0"},
                                             {"severity", "high"},
                                             {"score", 7.5},
                                             {"fixed", "1.17.0"}}})}};
  auto bom = bomStatement(release(), c, {"east", "0.1.0"}, advisories);
  ASSERT_TRUE(bom.isOk()) << bom.status().toString();
  const json doc = json::parse(bom->payload)["predicate"];
  ASSERT_EQ(doc["vulnerabilities"].size(), 1u) << doc.dump(2);
  const json& v = doc["vulnerabilities"][0];
  EXPECT_EQ(v["id"], "GHSA-0000-six");
  EXPECT_EQ(v["ratings"][0]["severity"], "high");
  EXPECT_EQ(v["ratings"][0]["score"], 7.5);
  EXPECT_EQ(v["references"][0]["id"], "CVE-2026-0001");
  EXPECT_EQ(v["recommendation"], "upgrade six to 1.17.0");
  EXPECT_EQ(v["affects"][0]["ref"], "pkg:pypi/six@1.16.0");
  // Advisories of another revision say nothing of the pinned one.
  advisories["revision"] = pinned + 1;
  auto other = bomStatement(release(), c, {"east", "0.1.0"}, advisories);
  ASSERT_TRUE(other.isOk());
  EXPECT_FALSE(json::parse(other->payload)["predicate"].contains("vulnerabilities"));
  // One naming no entry of the closure is an error, not a dangling reference.
  advisories["revision"] = pinned;
  advisories["items"][0]["package"] = "requests";
  auto dangling = bomStatement(release(), c, {"east", "0.1.0"}, advisories);
  ASSERT_FALSE(dangling.isOk());
  EXPECT_NE(dangling.status().message().find("GHSA-0000-six names requests 1.16.0"),
            std::string::npos)
      << dangling.status().message();
}

TEST(EvidenceStatus, PublishedFailedAndRetriedWithBackOff) {
  auto planned = *plannedStatements(release(), {"east", "0.1.0"});
  const std::string t0 = "2026-12-02T12:00:00Z";
  std::vector<EvidenceOutcome> outcomes = {
      {planned[0].name, planned[0].predicateType, planned[0].digest, "sha256:r1", "repo", false,
       ""},
      {planned[1].name, planned[1].predicateType, planned[1].digest, "", "", false,
       "registry registry.example: HTTP 429"}};
  EvidenceStatus st = foldEvidence(json::object(), planned, outcomes, "", 1, t0);
  ASSERT_EQ(st.entries.size(), 2u);
  EXPECT_EQ(st.entries[0]["phase"], "Published");
  EXPECT_EQ(st.entries[0]["referrer"], "sha256:r1");
  EXPECT_EQ(st.entries[1]["phase"], "Failed");
  EXPECT_EQ(st.entries[1]["attempts"], 1);
  EXPECT_EQ(st.condition["status"], "False");
  EXPECT_EQ(st.condition["reason"], "PublishFailed");
  EXPECT_NE(st.condition["message"].get<std::string>().find("HTTP 429"), std::string::npos);
  EXPECT_EQ(st.retryAfterSeconds, 5);

  // Within the back-off nothing is due; after it, only the failed one.
  const int64_t t0Unix = 1796212800;  // 2026-12-02T12:00:00Z
  int64_t wait = 0;
  EXPECT_TRUE(dueStatements(st.entries, planned, t0Unix + 2, &wait).empty());
  EXPECT_EQ(wait, 3);
  auto due = dueStatements(st.entries, planned, t0Unix + 5, &wait);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].name, planned[1].name);

  json status = {{"evidence", st.entries}, {"conditions", json::array({st.condition})}};
  EvidenceStatus again = foldEvidence(status, planned,
                                      {{planned[1].name, planned[1].predicateType,
                                        planned[1].digest, "sha256:r2", "repo", false, ""}},
                                      "", 1, "2026-12-02T12:00:05Z");
  EXPECT_EQ(again.entries[0]["publishedAt"], t0) << "a published entry keeps its first time";
  EXPECT_EQ(again.entries[1]["phase"], "Published");
  EXPECT_EQ(again.entries[1]["attempts"], 2);
  EXPECT_EQ(again.condition["status"], "True");
  EXPECT_EQ(again.retryAfterSeconds, 0);
  EXPECT_TRUE(dueStatements(again.entries, planned, t0Unix + 100, nullptr).empty());
}

TEST(EvidenceStatus, PublishedEvidenceIsAppendOnlyAndAChangedFailedOneIsDueAtOnce) {
  auto planned = *plannedStatements(release(), {});
  json entries = json::array();
  for (const auto& p : planned)
    entries.push_back({{"name", p.name},
                       {"statementDigest", "sha256:old"},
                       {"phase", "Published"},
                       {"referrer", "sha256:r"}});
  EXPECT_TRUE(dueStatements(entries, planned, 0, nullptr).empty())
      << "a later status (a superseded release's canary end) publishes no second statement";
  EvidenceStatus st = foldEvidence({{"evidence", entries}}, planned, {}, "", 1, "t");
  EXPECT_EQ(st.entries, entries) << "the published entries stay as recorded";
  EXPECT_EQ(st.condition["status"], "True");
  for (json& e : entries) {
    e["phase"] = "Failed";
    e["attempts"] = 1;
    e["lastAttemptAt"] = "2026-12-02T12:00:00Z";
  }
  EXPECT_EQ(dueStatements(entries, planned, 1796212800, nullptr).size(), planned.size())
      << "a failed statement that changed is not held by the old one's back-off";
}

TEST(EvidenceStatus, BackOffDoublesToFiveMinutes) {
  EXPECT_EQ(evidenceBackoffSeconds(1), 5);
  EXPECT_EQ(evidenceBackoffSeconds(2), 10);
  EXPECT_EQ(evidenceBackoffSeconds(7), 300);
  EXPECT_EQ(evidenceBackoffSeconds(50), 300);
}

}  // namespace
}  // namespace lockstep::controllers
