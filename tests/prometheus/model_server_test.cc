// The simulated model server's counters: what a Ready pod exports, when its
// error series appears, what a not-Ready or restarted pod exports.
#include "tests/prometheus/model_server.h"

#include <gtest/gtest.h>

namespace lockstep::testing {
namespace {

using namespace std::chrono_literals;
using Clock = ModelServerSim::Clock;

SimPod pod(const std::string& name, const std::string& release, const std::string& track,
           bool ready, int restarts = 0) {
  return {"ml", name, "gpt2", release, track, ready, restarts};
}

const char* kOk200 =
    R"(lockstep_test_requests_total{namespace="ml",pod="c-0",model="gpt2",release="v2",)"
    R"(track="canary",code="200"} )";
const char* k500 =
    R"(lockstep_test_requests_total{namespace="ml",pod="c-0",model="gpt2",release="v2",)"
    R"(track="canary",code="500"} )";

TEST(ModelServerSimTest, ANotReadyPodExportsNothingAndCountsFromItsReadiness) {
  ModelServerSim sim(10);
  Clock::time_point t0{};
  sim.upsert(pod("c-0", "v2", "canary", false), t0);
  EXPECT_EQ(sim.metrics(t0 + 5s).find("c-0"), std::string::npos);
  sim.upsert(pod("c-0", "v2", "canary", true), t0 + 5s);
  std::string m = sim.metrics(t0 + 7s);
  EXPECT_NE(m.find(std::string(kOk200) + "20\n"), std::string::npos) << m;  // 2 s at 10 rps
  EXPECT_EQ(m.find(k500), std::string::npos) << "no error yet, no error series:\n" << m;
}

TEST(ModelServerSimTest, TheErrorSeriesAppearsAfterTheFirstErrorOnly) {
  ModelServerSim sim(10);
  Clock::time_point t0{};
  sim.upsert(pod("c-0", "v2", "canary", true), t0);
  sim.upsert(pod("s-0", "v1", "stable", true), t0);
  sim.setRate("v2", 0.5, std::nullopt, t0 + 10s);
  std::string before = sim.metrics(t0 + 10s);
  EXPECT_EQ(before.find(k500), std::string::npos) << before;
  std::string after = sim.metrics(t0 + 12s);
  EXPECT_NE(after.find(std::string(k500) + "10\n"), std::string::npos) << after;
  EXPECT_NE(after.find(std::string(kOk200) + "110\n"), std::string::npos) << after;
  EXPECT_EQ(after.find(R"(pod="s-0",model="gpt2",release="v1",track="stable",code="500")"),
            std::string::npos)
      << "only v2's ratio was raised:\n"
      << after;
  // Back to 0 errors: the series stays (a counter never disappears while its pod serves).
  sim.setRate("v2", 0, std::nullopt, t0 + 12s);
  EXPECT_NE(sim.metrics(t0 + 20s).find(std::string(k500) + "10\n"), std::string::npos);
}

TEST(ModelServerSimTest, UnreadyKeepsCountersARestartResetsThemADeleteDropsThem) {
  ModelServerSim sim(10);
  Clock::time_point t0{};
  sim.upsert(pod("c-0", "v2", "canary", true), t0);
  sim.upsert(pod("c-0", "v2", "canary", false), t0 + 1s);  // a readiness flap
  EXPECT_EQ(sim.metrics(t0 + 3s).find("c-0"), std::string::npos);
  sim.upsert(pod("c-0", "v2", "canary", true), t0 + 3s);
  EXPECT_NE(sim.metrics(t0 + 4s).find(std::string(kOk200) + "20\n"), std::string::npos)
      << "10 while Ready before, nothing while not Ready, 10 since";
  sim.upsert(pod("c-0", "v2", "canary", false, 1), t0 + 4s);  // the container restarted
  sim.upsert(pod("c-0", "v2", "canary", true, 1), t0 + 6s);
  EXPECT_NE(sim.metrics(t0 + 7s).find(std::string(kOk200) + "10\n"), std::string::npos)
      << sim.metrics(t0 + 7s);
  sim.remove("ml", "c-0", t0 + 8s);
  EXPECT_EQ(sim.metrics(t0 + 9s).find("c-0"), std::string::npos);
}

TEST(ModelServerSimTest, RequestRateIsPerPodAndPerRelease) {
  ModelServerSim sim(10);
  Clock::time_point t0{};
  sim.setRate("v2", std::nullopt, 0.0, t0);
  sim.upsert(pod("c-0", "v2", "canary", true), t0);
  EXPECT_NE(sim.metrics(t0 + 5s).find(std::string(kOk200) + "0\n"), std::string::npos);
  EXPECT_EQ(sim.rate("v2").rps, 0);
  EXPECT_EQ(sim.rate("other").rps, 10);
}

}  // namespace
}  // namespace lockstep::testing
