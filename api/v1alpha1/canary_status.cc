#include "api/v1alpha1/canary_status.h"

#include <limits>

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

// Each reader returns "" or the error naming `at`.
std::string read(const json& v, const std::string& at, std::optional<std::string>& out) {
  if (!v.is_string()) return at + ": must be a string";
  out = v.get<std::string>();
  return "";
}

std::string read(const json& v, const std::string& at, std::optional<int64_t>& out) {
  if (!v.is_number_integer()) return at + ": must be an integer";
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return at + ": must be an integer of at most 64 bits";
  out = v.get<int64_t>();
  return "";
}

std::string read(const json& v, const std::string& at, std::optional<double>& out) {
  if (!v.is_number()) return at + ": must be a number";
  out = v.get<double>();
  return "";
}

std::string read(const json& v, const std::string& at, std::optional<bool>& out) {
  if (!v.is_boolean()) return at + ": must be a boolean";
  out = v.get<bool>();
  return "";
}

std::string mustBeObject(const json& v, const std::string& at) {
  return v.is_object() ? "" : at + ": must be an object";
}

// Calls `member(key, value, at)` for each non-null member of the object `j`;
// it returns an error, or "" when it read the member; a key it does not know
// goes to `extra` (member answers nullopt).
template <typename F>
std::string readObject(const json& j, const std::string& path, json& extra, F member) {
  if (std::string e = mustBeObject(j, path); !e.empty()) return e;
  for (const auto& [key, value] : j.items()) {
    if (value.is_null()) continue;  // absent
    const std::string at = path + "." + key;
    std::optional<std::string> e = member(key, value, at);
    if (!e) {
      extra[key] = value;
    } else if (!e->empty()) {
      return *e;
    }
  }
  return "";
}

std::string readKnownGood(const json& j, const std::string& path, CanaryKnownGood& out) {
  return readObject(j, path, out.extra,
                    [&](const std::string& key, const json& value,
                        const std::string& at) -> std::optional<std::string> {
                      if (key == "release") return read(value, at, out.release);
                      if (key == "package") return read(value, at, out.package);
                      if (key == "closureHash") return read(value, at, out.closureHash);
                      return std::nullopt;
                    });
}

std::string readMeasurement(const json& j, const std::string& path, CanaryMeasurement& out) {
  return readObject(j, path, out.extra,
                    [&](const std::string& key, const json& value,
                        const std::string& at) -> std::optional<std::string> {
                      if (key == "at") return read(value, at, out.at);
                      if (key == "value") {
                        if (value.is_number_integer()) {
                          std::optional<int64_t> integer;
                          // Past 64 bits: read as a number only.
                          if (read(value, at, integer).empty()) out.valueAsInteger = integer;
                        }
                        return read(value, at, out.value);
                      }
                      if (key == "error") return read(value, at, out.error);
                      return std::nullopt;
                    });
}

template <typename T, typename F>
std::string readArray(const json& v, const std::string& at, std::optional<std::vector<T>>& out,
                      F item) {
  if (!v.is_array()) return at + ": must be an array";
  std::vector<T> items(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::string e = item(v[i], at + "[" + std::to_string(i) + "]", items[i]); !e.empty())
      return e;
  }
  out = std::move(items);
  return "";
}

std::string readAnalysis(const json& j, const std::string& path, CanaryAnalysisStatus& out) {
  return readObject(j, path, out.extra,
                    [&](const std::string& key, const json& value,
                        const std::string& at) -> std::optional<std::string> {
                      if (key == "phase") return read(value, at, out.phase);
                      if (key == "message") return read(value, at, out.message);
                      if (key == "count") return read(value, at, out.count);
                      if (key == "successful") return read(value, at, out.successful);
                      if (key == "failed") return read(value, at, out.failed);
                      if (key == "errors") return read(value, at, out.errors);
                      if (key == "consecutiveErrors") return read(value, at, out.consecutiveErrors);
                      if (key == "lastMeasuredAt") return read(value, at, out.lastMeasuredAt);
                      if (key == "lastWasError") return read(value, at, out.lastWasError);
                      if (key == "measurements")
                        return readArray(value, at, out.measurements, readMeasurement);
                      return std::nullopt;
                    });
}

std::string readPassedAnalysis(const json& j, const std::string& path, PassedStepAnalysis& out) {
  return readObject(j, path, out.extra,
                    [&](const std::string& key, const json& value,
                        const std::string& at) -> std::optional<std::string> {
                      if (key == "count") return read(value, at, out.count);
                      if (key == "successful") return read(value, at, out.successful);
                      if (key == "failed") return read(value, at, out.failed);
                      if (key == "errors") return read(value, at, out.errors);
                      return std::nullopt;
                    });
}

std::string readPassedStep(const json& j, const std::string& path, PassedStep& out) {
  std::optional<int64_t> step;
  std::string e = readObject(j, path, out.extra,
                             [&](const std::string& key, const json& value,
                                 const std::string& at) -> std::optional<std::string> {
                               if (key == "step") return read(value, at, step);
                               if (key == "weight") return read(value, at, out.weight);
                               if (key == "startedAt") return read(value, at, out.startedAt);
                               if (key == "weightReachedAt")
                                 return read(value, at, out.weightReachedAt);
                               if (key == "passedAt") return read(value, at, out.passedAt);
                               if (key == "promotedBy") return read(value, at, out.promotedBy);
                               if (key == "analysis") {
                                 out.analysis.emplace();
                                 return readPassedAnalysis(value, at, *out.analysis);
                               }
                               return std::nullopt;
                             });
  if (!e.empty()) return e;
  if (!step) return path + ".step: is required";
  out.step = *step;
  return "";
}

// Writers: a member only when present.
template <typename T>
void put(json& out, const char* key, const std::optional<T>& v) {
  if (v) out[key] = *v;
}

json withExtra(const json& extra) { return extra.is_object() ? extra : json::object(); }

json encodeKnownGood(const CanaryKnownGood& k) {
  json out = withExtra(k.extra);
  put(out, "release", k.release);
  put(out, "package", k.package);
  put(out, "closureHash", k.closureHash);
  return out;
}

json encodeMeasurement(const CanaryMeasurement& m) {
  json out = withExtra(m.extra);
  put(out, "at", m.at);
  if (m.value && m.valueAsInteger && static_cast<double>(*m.valueAsInteger) == *m.value) {
    out["value"] = *m.valueAsInteger;
  } else {
    put(out, "value", m.value);
  }
  put(out, "error", m.error);
  return out;
}

json encodeAnalysis(const CanaryAnalysisStatus& a) {
  json out = withExtra(a.extra);
  put(out, "phase", a.phase);
  put(out, "message", a.message);
  put(out, "count", a.count);
  put(out, "successful", a.successful);
  put(out, "failed", a.failed);
  put(out, "errors", a.errors);
  put(out, "consecutiveErrors", a.consecutiveErrors);
  put(out, "lastMeasuredAt", a.lastMeasuredAt);
  put(out, "lastWasError", a.lastWasError);
  if (a.measurements) {
    json& ms = out["measurements"] = json::array();
    for (const CanaryMeasurement& m : *a.measurements) ms.push_back(encodeMeasurement(m));
  }
  return out;
}

json encodePassedStep(const PassedStep& p) {
  json out = withExtra(p.extra);
  out["step"] = p.step;
  put(out, "weight", p.weight);
  put(out, "startedAt", p.startedAt);
  put(out, "weightReachedAt", p.weightReachedAt);
  put(out, "passedAt", p.passedAt);
  put(out, "promotedBy", p.promotedBy);
  if (p.analysis) {
    json a = withExtra(p.analysis->extra);
    put(a, "count", p.analysis->count);
    put(a, "successful", p.analysis->successful);
    put(a, "failed", p.analysis->failed);
    put(a, "errors", p.analysis->errors);
    out["analysis"] = std::move(a);
  }
  return out;
}

}  // namespace

StatusOr<CanaryStatus> decodeCanaryStatus(const json& canary, const std::string& path) {
  CanaryStatus out;
  std::string e = readObject(canary, path, out.extra,
                             [&](const std::string& key, const json& value,
                                 const std::string& at) -> std::optional<std::string> {
                               if (key == "phase") return read(value, at, out.phase);
                               if (key == "capacity") return read(value, at, out.capacity);
                               if (key == "startedAt") return read(value, at, out.startedAt);
                               if (key == "step") return read(value, at, out.step);
                               if (key == "stepStartedAt")
                                 return read(value, at, out.stepStartedAt);
                               if (key == "weightReachedAt")
                                 return read(value, at, out.weightReachedAt);
                               if (key == "lastProgressAt")
                                 return read(value, at, out.lastProgressAt);
                               if (key == "podsToTarget") return read(value, at, out.podsToTarget);
                               if (key == "windowPausedAt")
                                 return read(value, at, out.windowPausedAt);
                               if (key == "promotion") return read(value, at, out.promotion);
                               if (key == "promotedBy") return read(value, at, out.promotedBy);
                               if (key == "abortedBy") return read(value, at, out.abortedBy);
                               if (key == "reason") return read(value, at, out.reason);
                               if (key == "message") return read(value, at, out.message);
                               if (key == "rollbackStartedAt")
                                 return read(value, at, out.rollbackStartedAt);
                               if (key == "finishedAt") return read(value, at, out.finishedAt);
                               if (key == "modelUid") return read(value, at, out.modelUid);
                               if (key == "anchorUid") return read(value, at, out.anchorUid);
                               if (key == "knownGood") {
                                 out.knownGood.emplace();
                                 return readKnownGood(value, at, *out.knownGood);
                               }
                               if (key == "analysis") {
                                 out.analysis.emplace();
                                 return readAnalysis(value, at, *out.analysis);
                               }
                               if (key == "passedSteps")
                                 return readArray(value, at, out.passedSteps, readPassedStep);
                               return std::nullopt;
                             });
  if (!e.empty()) return invalidArgument(e);
  return out;
}

json encodeCanaryStatus(const CanaryStatus& s) {
  json out = withExtra(s.extra);
  put(out, "phase", s.phase);
  put(out, "capacity", s.capacity);
  put(out, "startedAt", s.startedAt);
  put(out, "step", s.step);
  put(out, "stepStartedAt", s.stepStartedAt);
  put(out, "weightReachedAt", s.weightReachedAt);
  put(out, "lastProgressAt", s.lastProgressAt);
  put(out, "podsToTarget", s.podsToTarget);
  put(out, "windowPausedAt", s.windowPausedAt);
  put(out, "promotion", s.promotion);
  put(out, "promotedBy", s.promotedBy);
  put(out, "abortedBy", s.abortedBy);
  put(out, "reason", s.reason);
  put(out, "message", s.message);
  put(out, "rollbackStartedAt", s.rollbackStartedAt);
  put(out, "finishedAt", s.finishedAt);
  put(out, "modelUid", s.modelUid);
  put(out, "anchorUid", s.anchorUid);
  if (s.knownGood) out["knownGood"] = encodeKnownGood(*s.knownGood);
  if (s.analysis) out["analysis"] = encodeAnalysis(*s.analysis);
  if (s.passedSteps) {
    json& passed = out["passedSteps"] = json::array();
    for (const PassedStep& p : *s.passedSteps) passed.push_back(encodePassedStep(p));
  }
  return out;
}

CanaryStatusRead& CanaryStatusRead::operator=(const json& written) {
  *this = readCanaryStatus(written);
  return *this;
}

const CanaryStatus& CanaryStatusRead::orEmpty() const {
  static const CanaryStatus kEmpty;
  return status ? *status : kEmpty;
}

CanaryStatusRead readCanaryStatus(const json& written) {
  CanaryStatusRead out;
  if (written.is_null()) return out;
  out.written = true;
  StatusOr<CanaryStatus> s = decodeCanaryStatus(written);
  if (s.isOk()) {
    out.status = std::move(*s);
  } else {
    out.error = s.status().message();
    out.refused = written;
  }
  return out;
}

CanaryStatusRead readReleaseCanary(const json& release) {
  if (!release.is_object()) return {};
  const auto status = release.find("status");
  if (status == release.end() || !status->is_object()) return {};
  const auto canary = status->find("canary");
  return canary == status->end() ? CanaryStatusRead() : readCanaryStatus(*canary);
}

}  // namespace lockstep::api::v1alpha1
