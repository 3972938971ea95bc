// ModelServerSim: the traffic of a model's serving pods as a model server's
// client library counts it, for the test exporter (test_exporter.cc). Pure:
// the exporter feeds it the pods it watches and the clock; unit-tested in
// model_server_test.cc.
//
// Every Ready pod serves `rps` requests per second, a fraction `errors` of
// them with code 500 (both set per release, setRate). Its counter
//   lockstep_test_requests_total{namespace,pod,model,release,track,code}
// starts at 0 when the pod becomes Ready for the first time, and again after
// a container restart. The code="500" series appears only once the pod has
// served its first error (client libraries create a label set on first use).
// A pod that is not Ready, or is terminating, exports nothing: it is out of
// the Service and Prometheus does not scrape it. Counters are computed from
// the time elapsed, so rate() over a window after a change is exact.
// Thread-safety: none; the exporter holds a mutex around it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace lockstep::testing {

struct SimPod {
  std::string ns, name, model, release, track;
  bool ready = false;  // Ready and not terminating
  int restarts = 0;    // sum of the containers' restartCount
};

struct SimRate {
  double errors = 0;  // 0..1
  double rps = 10;    // per pod
};

class ModelServerSim {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ModelServerSim(double defaultRps = 10) : defaultRps_(defaultRps) {}

  // A pod was added or changed (the informer's view).
  void upsert(const SimPod& pod, Clock::time_point now);
  void remove(const std::string& ns, const std::string& name, Clock::time_point now);
  // The error ratio and, when set, the request rate per pod of a release's pods from now on.
  void setRate(const std::string& release, std::optional<double> errors, std::optional<double> rps,
               Clock::time_point now);
  SimRate rate(const std::string& release) const;

  // The Prometheus text exposition of every serving pod's counters.
  std::string metrics(Clock::time_point now);

 private:
  struct Counters {
    SimPod pod;
    bool started = false;  // has been Ready once since its last restart
    double total = 0, errors = 0;
    Clock::time_point since;
  };
  void advance(Counters& c, Clock::time_point now) const;

  double defaultRps_;
  std::map<std::string, Counters> pods_;  // by namespace/name
  std::map<std::string, SimRate> rates_;  // by release
};

}  // namespace lockstep::testing
