// Observation points of the admission path, so the pure admission library
// needs neither prometheus-cpp nor spdlog: the server wires Prometheus and
// log implementations (webhooks/metrics), tests use fakes.
// Thread-safety: implementations are called concurrently from server threads.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

// Everything worth counting or logging about one admission request. Carries no
// object content: names, decision and the violation message only.
struct AdmissionOutcome {
  std::string webhook;  // "pods" | "modelreleases"
  Operation operation = Operation::kUnknown;
  Decision decision = Decision::kAllowed;
  std::string uid;
  std::string ns;
  std::string name;  // request.name, or metadata.generateName + "*"
  std::string userName;
  bool dryRun = false;
  bool checked = false;  // the policy applied to the object
  std::string message;   // denial / audit message, or the decode error
  std::vector<std::string> warnings;
  std::chrono::nanoseconds duration{0};
};

class AdmissionRecorder {
 public:
  virtual ~AdmissionRecorder() = default;
  virtual void record(const AdmissionOutcome& outcome) = 0;
};

// Does nothing; for callers that do not observe.
class NullRecorder final : public AdmissionRecorder {
 public:
  void record(const AdmissionOutcome&) override {}
};

}  // namespace lockstep::webhooks
