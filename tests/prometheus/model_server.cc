#include "tests/prometheus/model_server.h"

#include <sstream>

namespace lockstep::testing {
namespace {

// A counter value the way Prometheus' text format reads it.
std::string number(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// A label value escaped for the text format.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

SimRate ModelServerSim::rate(const std::string& release) const {
  auto it = rates_.find(release);
  if (it != rates_.end()) return it->second;
  SimRate r;
  r.rps = defaultRps_;
  return r;
}

void ModelServerSim::advance(Counters& c, Clock::time_point now) const {
  if (c.pod.ready && c.started) {
    SimRate r = rate(c.pod.release);
    double seconds = std::chrono::duration<double>(now - c.since).count();
    if (seconds > 0) {
      c.total += r.rps * seconds;
      c.errors += r.rps * seconds * r.errors;
    }
  }
  c.since = now;
}

void ModelServerSim::upsert(const SimPod& pod, Clock::time_point now) {
  std::string key = pod.ns + "/" + pod.name;
  auto [it, inserted] = pods_.try_emplace(key);
  Counters& c = it->second;
  if (!inserted) advance(c, now);
  if (inserted || pod.restarts != c.pod.restarts) {
    // A new process: its counters start again from zero.
    c.started = false;
    c.total = c.errors = 0;
  }
  c.pod = pod;
  if (pod.ready) c.started = true;
  c.since = now;
}

void ModelServerSim::remove(const std::string& ns, const std::string& name, Clock::time_point) {
  pods_.erase(ns + "/" + name);
}

void ModelServerSim::setRate(const std::string& release, std::optional<double> errors,
                             std::optional<double> rps, Clock::time_point now) {
  for (auto& [key, c] : pods_) {
    if (c.pod.release == release) advance(c, now);
  }
  SimRate r = rate(release);
  if (errors) r.errors = *errors;
  if (rps) r.rps = *rps;
  rates_[release] = r;
}

std::string ModelServerSim::metrics(Clock::time_point now) {
  std::string out =
      "# HELP lockstep_test_requests_total Requests served by a simulated model server pod, by "
      "status code.\n# TYPE lockstep_test_requests_total counter\n";
  for (auto& [key, c] : pods_) {
    advance(c, now);
    if (!c.pod.ready || !c.started) continue;
    std::string labels = "namespace=" + quoted(c.pod.ns) + ",pod=" + quoted(c.pod.name) +
                         ",model=" + quoted(c.pod.model) + ",release=" + quoted(c.pod.release) +
                         ",track=" + quoted(c.pod.track);
    out += "lockstep_test_requests_total{" + labels + ",code=\"200\"} " +
           number(c.total - c.errors) + "\n";
    if (c.errors > 0) {
      out += "lockstep_test_requests_total{" + labels + ",code=\"500\"} " + number(c.errors) + "\n";
    }
  }
  return out;
}

}  // namespace lockstep::testing
