#include "controllers/modelrelease/gates/gate_verdict.h"

#include <cmath>
#include <cstdio>

#include "controllers/modelrelease/release_status.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using nlohmann::json;

std::string formatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::optional<json> jobCondition(const json& job, const std::string& type) {
  return kube::findCondition(decode::array(decode::object(job, "status"), "conditions"), type);
}

bool jobConditionTrue(const json& job, const std::string& type) {
  auto c = jobCondition(job, type);
  return c && c->value("status", "") == "True";
}

std::vector<const json*> podsOfJob(const std::vector<json>& pods, const std::string& jobName) {
  std::vector<const json*> out;
  for (const json& p : pods) {
    const json& labels = decode::object(decode::object(p, "metadata"), "labels");
    if (decode::string(labels, "batch.kubernetes.io/job-name") == jobName ||
        decode::string(labels, "job-name") == jobName)
      out.push_back(&p);
  }
  return out;
}

const json* terminatedState(const json& pod, const std::string& container) {
  for (const json& cs : decode::array(decode::object(pod, "status"), "containerStatuses")) {
    if (decode::string(cs, "name") != container) continue;
    const json* t = v1::decode::member(decode::object(cs, "state"), "terminated");
    return t != nullptr && t->is_object() ? t : nullptr;
  }
  return nullptr;
}

std::string mainContainerOf(const json& job) {
  const json& containers =
      decode::array(decode::object(decode::object(decode::object(job, "spec"), "template"), "spec"),
                    "containers");
  if (containers.empty()) return "";
  return decode::string(containers[0], "name");
}

GateVerdict checkMetrics(const std::vector<v1::MetricThreshold>& thresholds,
                         const std::string& container, const std::string& text) {
  GateVerdict v;
  std::string where = "termination message of container " + quote(container);
  if (text.size() > kMaxTerminationMessage) {
    v.message = where + " is " + std::to_string(text.size()) + " bytes; at most " +
                std::to_string(kMaxTerminationMessage) + " are allowed";
    return v;
  }
  bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank) {
    if (thresholds.empty()) {
      v.passed = true;
      v.message = "Job completed; no metrics required";
      return v;
    }
    v.message = where + " is empty; expected a JSON object with " + quote(thresholds[0].name);
    return v;
  }
  json report = json::parse(text, nullptr, false);
  if (report.is_discarded() || !report.is_object()) {
    std::string shown = text.size() > 80 ? text.substr(0, 80) + "…" : text;
    v.message = where + " is not a JSON object: " + quote(shown);
    return v;
  }
  for (const auto& [k, val] : report.items()) {
    if (val.is_number() && std::isfinite(val.get<double>())) v.metrics[k] = val;
  }
  std::vector<std::string> failures, passes;
  for (const v1::MetricThreshold& t : thresholds) {
    if (!report.contains(t.name)) {
      failures.push_back("metric " + quote(t.name) + " is missing from the " + where);
      continue;
    }
    const json& val = report[t.name];
    if (!val.is_number() || !std::isfinite(val.get<double>())) {
      failures.push_back("metric " + quote(t.name) + " is " + val.dump() + ", not a number");
      continue;
    }
    double x = val.get<double>();
    if (t.min && x < *t.min) {
      failures.push_back("metric " + quote(t.name) + " is " + formatNumber(x) +
                         ", below the minimum " + formatNumber(*t.min));
    } else if (t.max && x > *t.max) {
      failures.push_back("metric " + quote(t.name) + " is " + formatNumber(x) +
                         ", above the maximum " + formatNumber(*t.max));
    } else {
      std::string bound = t.min ? ">= " + formatNumber(*t.min) : "";
      if (t.max) bound += std::string(bound.empty() ? "" : ", ") + "<= " + formatNumber(*t.max);
      passes.push_back(t.name + " " + formatNumber(x) + " " + bound);
    }
  }
  std::string joined;
  for (const auto& s : failures.empty() ? passes : failures)
    joined += (joined.empty() ? "" : "; ") + s;
  v.passed = failures.empty();
  v.message = v.passed ? (joined.empty() ? "Job completed" : joined) : joined;
  return v;
}

}  // namespace lockstep::controllers
