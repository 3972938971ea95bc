// The OSV endpoint source over a FakeTransport: a reconcile's lookUp() returns at once,
// the dispatcher looks the closure up and wakes the RuntimeEnvs that asked, the answer
// is in the next snapshot; a failed lookup keeps the last good answer with the error.
#include "controllers/runtimeenv/advisory_source.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::controllers {
namespace {

using lockstep::testing::FakeTransport;
using nlohmann::json;

kube::Response answer(int status, const std::string& body) {
  kube::Response r;
  r.status = status;
  r.body = body;
  return r;
}

// Answers idna 3.4 with one record, GHSA-a.
void serveOneRecord(FakeTransport& t) {
  t.setHandler([](const kube::Request& r) -> std::optional<lockstep::testing::FakeReply> {
    if (r.path == "/v1/querybatch")
      return answer(200, R"({"results":[{"vulns":[{"id":"GHSA-a","modified":"m1"}]}]})");
    if (r.path == "/v1/vulns/GHSA-a")
      return answer(
          200,
          json{{"id", "GHSA-a"},
               {"modified", "m1"},
               {"database_specific", {{"severity", "HIGH"}}},
               {"affected",
                {{{"package", {{"ecosystem", "PyPI"}, {"name", "idna"}}}, {"versions", {"3.4"}}}}}}
              .dump());
    return answer(404, "");
  });
}

struct Woken {
  std::mutex mu;
  std::condition_variable cv;
  std::multiset<std::string> keys;
  bool waitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return keys.size() >= n; });
  }
};

TEST(OsvEndpointSource, LooksUpOffTheCallerAndWakesWhoAsked) {
  auto t = std::make_shared<FakeTransport>();
  serveOneRecord(*t);
  advisories::OsvClientConfig config;
  config.url = "https://osv.example";
  auto client = advisories::OsvClient::create(config, t);
  ASSERT_TRUE(client.isOk());
  testing::FakeClock clock;
  OsvEndpointSource source(std::move(*client), clock);
  Woken woken;
  source.setWake([&woken](const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(woken.mu);
    woken.keys.insert(ns + "/" + name);
    woken.cv.notify_all();
  });
  auto before = source.snapshot();
  EXPECT_TRUE(before->endpoint);
  EXPECT_EQ(before->source, "https://osv.example (OSV API)");
  EXPECT_TRUE(before->byClosure.empty());

  const AdvisoryLookup lookup{"sha256:c1", {{"pypi", "idna", "3.4", {}}}};
  // Two RuntimeEnvs with the same closure: one lookup, both woken.
  source.lookUp("ns", "a", {lookup});
  source.lookUp("ns", "b", {lookup});
  ASSERT_TRUE(woken.waitFor(2));
  EXPECT_EQ(woken.keys, (std::multiset<std::string>{"ns/a", "ns/b"}));
  EXPECT_LE(t->requestCount(), 4u) << "one querybatch and one record, at most twice";
  auto after = source.snapshot();
  ASSERT_EQ(after->byClosure.count("sha256:c1"), 1u);
  const AdvisoryAnswer& a = after->byClosure.at("sha256:c1");
  ASSERT_NE(a.index, nullptr);
  EXPECT_TRUE(a.error.empty());
  EXPECT_FALSE(a.checkedAt.empty());
  auto report = a.index->match(lookup.packages);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].id, "GHSA-a");
  EXPECT_TRUE(before->byClosure.empty()) << "a snapshot taken before does not change";

  // The endpoint goes down: the last good answer stays, with what went wrong.
  t->setHandler([](const kube::Request&) -> std::optional<lockstep::testing::FakeReply> {
    return answer(503, "maintenance");
  });
  clock.advance(std::chrono::minutes(31));
  source.run(lookup);
  const AdvisoryAnswer& kept = source.snapshot()->byClosure.at("sha256:c1");
  ASSERT_NE(kept.index, nullptr);
  EXPECT_EQ(kept.index->size(), 1u);
  EXPECT_EQ(kept.error, "https://osv.example/v1/querybatch: HTTP 503: maintenance");
  EXPECT_EQ(kept.checkedAt, a.checkedAt);
  EXPECT_GT(kept.attemptedAtUnix, kept.checkedAtUnix);
}

}  // namespace
}  // namespace lockstep::controllers
