#include "webhooks/admission/analysis_advice.h"

#include <algorithm>
#include <cctype>

#include "api/v1alpha1/model_release.h"
#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {

namespace ja = json_access;
using nlohmann::json;

namespace {

// A PromQL duration ("1h30m", "500ms") at the start of `s`, in milliseconds.
std::optional<int64_t> durationMs(std::string_view s) {
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    int64_t n = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      n = std::min<int64_t>(n * 10 + (s[i] - '0'), int64_t{1} << 40);
      ++i;
    }
    int64_t unit = 0;  // milliseconds
    constexpr int64_t kSecond = 1000;
    if (s.substr(i, 2) == "ms") {
      unit = 1;
      i += 2;
    } else if (i < s.size()) {
      switch (s[i]) {
        case 's':
          unit = kSecond;
          break;
        case 'm':
          unit = 60 * kSecond;
          break;
        case 'h':
          unit = 3600 * kSecond;
          break;
        case 'd':
          unit = 86400 * kSecond;
          break;
        case 'w':
          unit = 7 * (86400 * kSecond);
          break;
        case 'y':
          unit = 365 * (86400 * kSecond);
          break;
        default:
          return std::nullopt;
      }
      ++i;
    } else {
      return std::nullopt;
    }
    total += n * unit;
    any = true;
  }
  if (!any || i != s.size()) return std::nullopt;
  return total;
}

std::string seconds(int64_t s) { return std::to_string(s) + "s"; }

void adviseOne(const json* analysis, const std::string& path, std::vector<std::string>& out) {
  const std::string* query = ja::str(ja::at(analysis, {"prometheus", "query"}));
  if (query == nullptr) return;
  std::optional<int64_t> window = longestRangeSeconds(*query);
  if (!window) return;
  int64_t delay = 0;
  if (const std::string* d = ja::str(ja::at(analysis, {"prometheus", "initialDelay"}))) {
    auto parsed = api::v1alpha1::parseStageDuration(*d);
    if (!parsed) return;  // malformed: the CRD and the decoder say so
    delay = *parsed;
  }
  if (delay >= *window) return;
  out.push_back("lockstep: " + path + ".prometheus: initialDelay " + seconds(delay) +
                " is shorter than the query's range window " + seconds(*window) +
                ": the first measurements judge samples of pods that are not this canary's "
                "(the previous canary's, or none yet); set initialDelay to at least " +
                seconds(*window) + " plus one scrape interval (docs/rollouts.md)");
}

}  // namespace

std::optional<int64_t> longestRangeSeconds(std::string_view q) {
  std::optional<int64_t> longestMs;
  for (size_t i = 0; i < q.size(); ++i) {
    char c = q[i];
    if (c == '"' || c == '\'' || c == '`') {  // a string literal: skip to its end
      for (++i; i < q.size() && q[i] != c; ++i) {
        if (q[i] == '\\' && c != '`') ++i;
      }
      continue;
    }
    if (c != '[') continue;
    size_t end = q.find_first_of(":]", i + 1);
    if (end == std::string_view::npos) break;
    std::string range;
    for (char r : q.substr(i + 1, end - i - 1))
      if (!std::isspace(static_cast<unsigned char>(r))) range += r;
    if (auto ms = durationMs(range)) longestMs = std::max(longestMs.value_or(0), *ms);
    i = end;
  }
  if (!longestMs) return std::nullopt;
  return (*longestMs + 999) / 1000;
}

void adviseAnalyses(const json* spec, std::vector<std::string>& warnings) {
  const json* stages = ja::child(spec, "stages");
  if (!ja::isArray(stages)) return;
  for (size_t i = 0; i < stages->size(); ++i) {
    const json* canary = ja::child(&(*stages)[i], "canary");
    const std::string path = "spec.stages[" + std::to_string(i) + "].canary";
    if (const json* a = ja::child(canary, "analysis")) adviseOne(a, path + ".analysis", warnings);
    const json* steps = ja::child(canary, "steps");
    if (!ja::isArray(steps)) continue;
    for (size_t s = 0; s < steps->size(); ++s) {
      if (const json* a = ja::child(&(*steps)[s], "analysis"))
        adviseOne(a, path + ".steps[" + std::to_string(s) + "].analysis", warnings);
    }
  }
}

namespace {

void checkSource(const json* analysis, const std::string& path, bool allowAddresses,
                 std::vector<std::string>& out) {
  const json* address = ja::at(analysis, {"prometheus", "address"});
  if (address == nullptr || allowAddresses) return;
  const std::string* text = ja::str(address);
  out.push_back(path + ".prometheus.address" + (text ? " \"" + *text + "\"" : std::string()) +
                ": a release may not choose the Prometheus address (the operator would call it "
                "from inside the cluster); name an AnalysisProvider in " +
                path +
                ".prometheus.provider instead (kubectl get analysisproviders), or ask the "
                "platform team to run the operator with --allow-release-prometheus-address");
}

}  // namespace

void checkAnalysisSources(const json* spec, bool allowAddresses, std::vector<std::string>& out) {
  const json* stages = ja::child(spec, "stages");
  if (!ja::isArray(stages)) return;
  for (size_t i = 0; i < stages->size(); ++i) {
    const json* canary = ja::child(&(*stages)[i], "canary");
    const std::string path = "spec.stages[" + std::to_string(i) + "].canary";
    if (const json* a = ja::child(canary, "analysis"))
      checkSource(a, path + ".analysis", allowAddresses, out);
    const json* steps = ja::child(canary, "steps");
    if (!ja::isArray(steps)) continue;
    for (size_t s = 0; s < steps->size(); ++s) {
      if (const json* a = ja::child(&(*steps)[s], "analysis"))
        checkSource(a, path + ".steps[" + std::to_string(s) + "].analysis", allowAddresses, out);
    }
  }
}

}  // namespace lockstep::webhooks
