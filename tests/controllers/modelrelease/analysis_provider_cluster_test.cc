// Analysis providers belong to the platform (issue 20, must-show 4; issue 29,
// must-show 1: tenants), against
// the real control plane: a release names an AnalysisProvider (cluster-scoped)
// and gives only the query; a release naming its own address is refused; and
// a provider that never answers (a TCP listener that accepts and never
// replies) delays only its own releases: that release rolls back after its
// error limit while another model's release, on the test world's real
// Prometheus, promotes on time. The operator runs with ONE reconcile worker
// here, so a query run on the reconcile workers would hold up every release
// (the timing bounds below fail then; docs/rollouts.md "Analysis providers").
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Accepts every connection on 127.0.0.1 and never writes a byte.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0)
      return;
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        accepted_++;
        std::lock_guard<std::mutex> lock(mu_);
        open_.push_back(c);  // kept open, never answered
      }
    });
  }
  ~SilentListener() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
    for (int c : open_) ::close(c);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::mutex mu_;
  std::vector<int> open_;
};

json prodStage(json steps, int replicas = 2) {
  return ProdStageBuilder(std::move(steps)).replicas(replicas).noWarmup().build();
}

// "2026-12-03T08:20:01Z" as Unix seconds (0 if malformed).
int64_t unixOf(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream in(rfc3339);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

json readyCondition(const json& o) {
  for (const json& c : o.value("/status/conditions"_json_pointer, json::array()))
    if (c.value("type", "") == "Ready") return c;
  return json::object();
}

class AnalysisProviderClusterTest : public ::testing::Test {
 protected:
  // One reconcile worker: a query on it would stall every release.
  static void SetUpTestSuite() { ASSERT_EQ(ReleaseWorld::startOperator({"--workers=1"}), ""); }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  void TearDown() override {
    slow_.tearDown(HasFailure());
    fast_.tearDown(HasFailure());
  }
  ReleaseWorld slow_, fast_;
};

// Must-show 4.
TEST_F(AnalysisProviderClusterTest,
       ANeverAnsweringProviderRollsBackOnlyItsReleaseAnotherPromotesOnTime) {
  SilentListener silent;
  ASSERT_GT(silent.port(), 0);
  ASSERT_EQ(slow_.setUp({.nsPrefix = "slowprov", .model = "slow"}), "");
  ASSERT_EQ(fast_.setUp({.nsPrefix = "fastprov", .prometheus = true}), "");
  // The platform's provider for the silent address: 10s per query (the client
  // abandons the request 2s later), 2 in flight.
  const std::string never = slow_.addProvider("http://127.0.0.1:" + std::to_string(silent.port()),
                                              {{"timeout", "10s"}, {"maxConcurrentQueries", 2}});
  ASSERT_FALSE(never.empty());

  // Both models have a prod stable first (no analysis).
  ASSERT_EQ(slow_
                .createRelease("s1", testPackage('1'),
                               json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  ASSERT_EQ(fast_
                .createRelease("f1", testPackage('2'),
                               json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  slow_.waitPhase("s1", "Promoted");
  fast_.waitPhase("f1", "Promoted");

  // s2 measures on the silent provider: every query times out, an error
  // each; consecutiveErrorLimit 4 → the fifth error rolls it back.
  json slowStep = {{"weight", 50},
                   {"analysis",
                    {{"prometheus",
                      {{"provider", never},
                       {"query", "vector(0)"},
                       {"max", 0.1},
                       {"interval", "2s"},
                       {"count", 3},
                       {"consecutiveErrorLimit", 4}}}}}};
  ASSERT_EQ(
      slow_.createRelease("s2", testPackage('3'), json::array({prodStage(json::array({slowStep}))}))
          .exitCode,
      0);
  // Its weight is reached (its first query goes out at once: no initialDelay)
  // before f2 starts.
  ASSERT_TRUE(eventually(
      [&] {
        json s = slow_.get("mr", "s2");
        return !s.is_discarded() && s.contains("/status/canary/weightReachedAt"_json_pointer);
      },
      std::chrono::seconds(90)))
      << slow_.get("mr", "s2").value("status", json()).dump(2);
  const auto slowMeasuring = Clock::now();

  // f2, another model on the real Prometheus: 3 measurements 2s apart after
  // the 12s initialDelay at 50 %, then 100 %.
  const auto f2Created = Clock::now();
  ASSERT_EQ(fast_
                .createRelease("f2", testPackage('4'),
                               json::array({prodStage(json::array(
                                   {fast_.analysedStep(50, 3), json{{"weight", 100}}}))}))
                .exitCode,
            0);
  json f2 = fast_.waitPhase("f2", "Promoted", std::chrono::seconds(120));
  const auto f2Took = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - f2Created);
  EXPECT_EQ(f2.value("/status/canary/passedSteps/0/analysis/successful"_json_pointer, -1), 3)
      << f2["status"].dump(2);
  // On time: initialDelay 12s + 3 measurements + two steps' pods took 18s
  // here. With the queries on the (one) reconcile worker, f2's reconciles
  // wait behind s2's 12s queries: 66s when that was tried (the reconcile
  // waiting for its answer in the controller).
  EXPECT_LE(f2Took.count(), 40) << "f2 took " << f2Took.count()
                                << "s to promote: did it wait for the silent provider?";
  // Meanwhile s2 is still measuring (its five timeouts take ~70s), unless it
  // already rolled back.
  json s2 = slow_.waitPhase("s2", "RolledBack", std::chrono::seconds(150));
  const auto slowTook =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - slowMeasuring);
  EXPECT_EQ(conditionField(s2, "Stalled", "reason"), "AnalysisError") << s2["status"].dump(2);
  EXPECT_EQ(s2.value("/status/canary/analysis/successful"_json_pointer, -1), 0);
  EXPECT_EQ(s2.value("/status/canary/analysis/errors"_json_pointer, 0), 5) << s2["status"].dump(2);
  // Every error is a timeout of the provider, never a pass.
  for (const json& m :
       s2.value("/status/canary/analysis/measurements"_json_pointer, json::array())) {
    EXPECT_FALSE(m.contains("value")) << m.dump();
    EXPECT_NE(m.value("error", "").find("no answer within"), std::string::npos) << m.dump();
  }
  // Five timeouts of 12s, 2s apart: about 70s; never far beyond (a query
  // that hung would keep the release measuring).
  EXPECT_GE(slowTook.count(), 45) << "s2 rolled back before its errors could be timeouts";
  EXPECT_LE(slowTook.count(), 120);
  EXPECT_EQ(slow_.stableRelease(), "s1");
  EXPECT_EQ(fast_.stableRelease(), "f2");
  EXPECT_GE(silent.accepted(), 5);  // the queries did reach it (and the health check)
  // The silent provider's status says its queries fail (the health check timed out).
  json provider = kubectlJson({"get", "analysisprovider", never});
  EXPECT_EQ(readyCondition(provider).value("status", ""), "False") << provider.dump(2);
  EXPECT_EQ(readyCondition(provider).value("reason", ""), "QueryFailed") << provider.dump(2);
  json real = kubectlJson({"get", "analysisprovider", fast_.providerName()});
  EXPECT_EQ(readyCondition(real).value("status", ""), "True") << real.dump(2);
}

// The SSRF rule: a release choosing its own Prometheus address is refused at
// admission, naming the field; an address in a provider needs https or an
// explicit allowInsecureHttp.
TEST_F(AnalysisProviderClusterTest, AReleaseAddressIsRefusedAndAProviderNeedsHttpsOrTheOptIn) {
  ASSERT_EQ(fast_.setUp({.nsPrefix = "ssrf", .prometheus = true}), "");
  json step = {{"weight", 50},
               {"analysis",
                {{"prometheus",
                  {{"address", "http://169.254.169.254/latest"}, {"query", "up"}, {"max", 1}}}}}};
  CommandResult r =
      fast_.createRelease("x1", testPackage('5'), json::array({prodStage(json::array({step}))}));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("spec.stages[0].canary.steps[0].analysis.prometheus.address "
                       "\"http://169.254.169.254/latest\": a release may not choose the "
                       "Prometheus address"),
            std::string::npos)
      << r.err;
  json plain = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "AnalysisProvider"},
                {"metadata", {{"name", fast_.ns() + "-plain"}}},
                {"spec", {{"address", "http://prometheus.monitoring:9090"}}}};
  CommandResult p = kubectl({"create", "-f", "-"}, plain.dump());
  EXPECT_NE(p.exitCode, 0);
  EXPECT_NE(p.err.find("spec.address: plain http needs spec.allowInsecureHttp: true"),
            std::string::npos)
      << p.err;
}

// A failing TLS handshake or a missing token shows in the provider's Ready,
// naming the Secret, never a token.
TEST_F(AnalysisProviderClusterTest, AFailingTlsOrAMissingTokenShowsInReady) {
  ASSERT_EQ(fast_.setUp({.nsPrefix = "tls", .prometheus = true}), "");
  // https to the test world's plain-http Prometheus: the handshake fails.
  std::string url = fast_.prom().url();
  const std::string tls = fast_.addProvider("https://" + url.substr(url.find("://") + 3));
  const std::string token =
      fast_.addProvider("https://" + url.substr(url.find("://") + 3),
                        {{"bearerTokenSecretRef", {{"name", "no-such-token"}}}});
  ASSERT_FALSE(tls.empty());
  ASSERT_FALSE(token.empty());
  json a, b;
  EXPECT_TRUE(eventually(
      [&] {
        a = kubectlJson({"get", "analysisprovider", tls});
        return readyCondition(a).value("reason", "") == "QueryFailed";
      },
      std::chrono::seconds(60)))
      << a.dump(2);
  EXPECT_EQ(readyCondition(a).value("status", ""), "False");
  EXPECT_NE(readyCondition(a).value("message", "").find("unreachable"), std::string::npos)
      << a.dump(2);
  EXPECT_TRUE(eventually(
      [&] {
        b = kubectlJson({"get", "analysisprovider", token});
        return readyCondition(b).value("reason", "") == "TokenUnavailable";
      },
      std::chrono::seconds(60)))
      << b.dump(2);
  EXPECT_NE(readyCondition(b).value("message", "").find("spec.bearerTokenSecretRef: Secret "),
            std::string::npos)
      << b.dump(2);
  EXPECT_NE(readyCondition(b).value("message", "").find("/no-such-token not found"),
            std::string::npos)
      << b.dump(2);
}

// Must-show 1 of issue 29 (tenants on one cluster; docs/rollouts.md
// "Providers scoped to tenants"). Tenant A's provider serves only A: B's
// release naming it is refused at apply, naming it. A shared provider (both
// namespaces, templates only, ONE query in flight) runs the platform's
// template for both: B asks for every release's series (release=~".+") and
// gets none of A's (the operator pins {{namespace}} to B; B's pods are not
// scraped, so B's every measurement is an empty vector), while A's healthy
// canary, measured through the same template and the same single slot while
// B's queries keep coming, promotes on time. (200 queued queries of B are
// the fake-clock unit test's: QueryScheduler.TwoHundredQueuedQueries...)
TEST_F(AnalysisProviderClusterTest, TenantBCannotUseOrReadTenantAsAnalysisNorDelayIt) {
  ASSERT_EQ(fast_.setUp({.nsPrefix = "tenant-a", .prometheus = true}), "");
  ASSERT_EQ(slow_.setUp({.nsPrefix = "tenant-b", .model = "bmodel"}), "");
  const std::string tmpl = fast_.ns() + "-ratio";
  json tmplObject = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "AnalysisTemplate"},
      {"metadata", {{"name", tmpl}}},
      {"spec",
       {{"query",
         "(sum(rate(lockstep_test_requests_total{namespace={{namespace}},release=~{{args.release}},"
         "code=\"500\"}[10s])) or vector(0)) / "
         "sum(rate(lockstep_test_requests_total{namespace={{namespace}},release=~{{args.release}}}"
         "[10s]))"},
        {"args", {{{"name", "release"}, {"pattern", "[a-z0-9.+*-]+"}}}}}}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, tmplObject.dump()).exitCode, 0);
  struct Cleanup {
    std::string name;
    ~Cleanup() { kubectl({"delete", "analysistemplate", name, "--ignore-not-found"}); }
  } cleanup{tmpl};
  auto templated = [&](const std::string& provider, const std::string& release,
                       const std::string& interval, int count, int errorLimit = 2,
                       const std::string& initialDelay = "12s") {
    return json{{"weight", 50},
                {"analysis",
                 {{"prometheus",
                   {{"provider", provider},
                    {"template", tmpl},
                    {"args", {{"release", release}}},
                    {"max", 0.1},
                    {"interval", interval},
                    {"initialDelay", initialDelay},
                    {"count", count},
                    {"consecutiveErrorLimit", errorLimit}}}}}};
  };

  // B names A's provider (open to A only): refused at apply, naming it.
  CommandResult refused = slow_.createRelease(
      "b0", testPackage('6'),
      json::array({prodStage(json::array({templated(fast_.providerName(), "b0", "2s", 3)}))}));
  EXPECT_NE(refused.exitCode, 0);
  EXPECT_NE(
      refused.err.find("spec.stages[0].canary.steps[0].analysis.prometheus.provider: "
                       "AnalysisProvider \"" +
                       fast_.providerName() + "\" does not serve namespace \"" + slow_.ns() + "\""),
      std::string::npos)
      << refused.err;
  // A free-form query on a templates-only provider: refused too.
  const std::string shared = fast_.addProvider(
      fast_.prom().url(),
      {{"namespaceSelector",
        {{"matchExpressions", json::array({{{"key", "kubernetes.io/metadata.name"},
                                            {"operator", "In"},
                                            {"values", {fast_.ns(), slow_.ns()}}}})}}},
       {"allowFreeFormQueries", false},
       {"maxConcurrentQueries", 1}});
  ASSERT_FALSE(shared.empty());
  CommandResult freeForm = slow_.createRelease(
      "b0", testPackage('6'),
      json::array({prodStage(json::array({json{{"weight", 50},
                                               {"analysis",
                                                {{"prometheus",
                                                  {{"provider", shared},
                                                   {"query", "sum(lockstep_test_requests_total)"},
                                                   {"max", 1}}}}}}}))}));
  EXPECT_NE(freeForm.exitCode, 0);
  EXPECT_NE(freeForm.err.find("analysis.prometheus.query: AnalysisProvider \"" + shared +
                              "\" does not run free-form queries"),
            std::string::npos)
      << freeForm.err;

  ASSERT_EQ(fast_
                .createRelease("a1", testPackage('1'),
                               json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  ASSERT_EQ(slow_
                .createRelease("b1", testPackage('2'),
                               json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  fast_.waitPhase("a1", "Promoted");
  slow_.waitPhase("b1", "Promoted");
  // B's canary asks for every release's series (A's exist in this
  // Prometheus), every second for about 45 s, on the shared provider's one slot.
  ASSERT_EQ(
      slow_
          .createRelease(
              "b2", testPackage('3'),
              json::array({prodStage(json::array({templated(shared, ".+", "1s", 100, 45, "0s")}))}))
          .exitCode,
      0);
  ASSERT_TRUE(eventually(
      [&] {
        json b = slow_.get("mr", "b2");
        return !b.is_discarded() && b.contains("/status/canary/weightReachedAt"_json_pointer);
      },
      std::chrono::seconds(90)));
  const auto aCreated = Clock::now();
  ASSERT_EQ(fast_
                .createRelease("a2", testPackage('4'),
                               json::array({prodStage(json::array(
                                   {templated(shared, "a2", "2s", 3), json{{"weight", 100}}}))}))
                .exitCode,
            0);
  // A's measurements, as its status shows them while the step runs (a
  // passed step keeps only the counts).
  std::map<std::string, json> aMeasured;  // by "at"
  bool bMeasuringMeanwhile = false;
  ASSERT_TRUE(eventually(
      [&] {
        json a = fast_.get("mr", "a2");
        if (a.is_discarded()) return false;
        for (const json& m :
             a.value("/status/canary/analysis/measurements"_json_pointer, json::array())) {
          aMeasured[m.value("at", "")] = m;
          if (slow_.get("mr", "b2").value("/status/phase"_json_pointer, "") == "Canary")
            bMeasuringMeanwhile = true;
        }
        return a.value("/status/phase"_json_pointer, "") == "Promoted";
      },
      std::chrono::seconds(120)))
      << fast_.get("mr", "a2").value("status", json()).dump(2);
  json a2 = fast_.get("mr", "a2");
  const auto aTook = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - aCreated);
  EXPECT_EQ(a2.value("/status/canary/passedSteps/0/analysis/successful"_json_pointer, -1), 3)
      << a2["status"].dump(2);
  EXPECT_LE(aTook.count(), 40) << "a2 took " << aTook.count() << "s to promote";
  // A's measurements were each asked within one interval (2 s) of the
  // previous one's answer: at most 2 intervals apart, plus a second of rounding.
  ASSERT_GE(aMeasured.size(), 2u);
  int64_t previous = 0;
  for (const auto& [at, m] : aMeasured) {
    EXPECT_TRUE(m.contains("value")) << m.dump();
    if (previous > 0) {
      EXPECT_LE(unixOf(at) - previous, 5) << at;
    }
    previous = unixOf(at);
  }
  EXPECT_TRUE(bMeasuringMeanwhile) << "B's queries were not running while A measured";

  // B never read a value: every measurement is an empty vector (its own
  // namespace has no series), so it rolls back with AnalysisError.
  json b2 = slow_.waitPhase("b2", "RolledBack", std::chrono::seconds(120));
  EXPECT_EQ(conditionField(b2, "Stalled", "reason"), "AnalysisError") << b2["status"].dump(2);
  const json bMeasured =
      b2.value("/status/canary/analysis/measurements"_json_pointer, json::array());
  EXPECT_FALSE(bMeasured.empty()) << b2["status"].dump(2);
  for (const json& m : bMeasured) {
    EXPECT_FALSE(m.contains("value")) << "B read a value: " << m.dump();
    EXPECT_NE(m.value("error", "").find("empty vector"), std::string::npos) << m.dump();
    EXPECT_EQ(m.dump().find(fast_.ns()), std::string::npos) << "A's namespace in B's status";
  }
  EXPECT_EQ(fast_.stableRelease(), "a2");
}

}  // namespace
}  // namespace lockstep::testing
