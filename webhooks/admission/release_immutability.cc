#include "webhooks/admission/release_immutability.h"

#include <algorithm>
#include <set>

#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {
namespace {

namespace ja = json_access;
using nlohmann::json;

std::string describeReleaseImmutability(const json* v) {
  if (v == nullptr || v->is_null()) return "<unset>";
  if (v->is_string()) return "\"" + v->get<std::string>() + "\"";
  if (v->is_number() || v->is_boolean()) return v->dump();
  return "<" + std::string(v->type_name()) + ">";
}

}  // namespace

bool releaseLeftPending(const json* release) {
  std::string phase = ja::strOr(ja::at(release, {"status", "phase"}));
  return !phase.empty() && phase != "Pending";
}

std::string firstDifference(const json* now, const json* before, const std::string& path) {
  const bool a = now != nullptr && !now->is_null();
  const bool b = before != nullptr && !before->is_null();
  if (!a && !b) return "";
  if (a != b || now->type() != before->type()) return path;
  if (now->is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : now->items()) keys.insert(k);
    for (const auto& [k, v] : before->items()) keys.insert(k);
    for (const std::string& k : keys) {
      std::string d = firstDifference(ja::child(now, k), ja::child(before, k), path + "." + k);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (now->is_array()) {
    const size_t n = std::max(now->size(), before->size());
    for (size_t i = 0; i < n; ++i) {
      const json* x = i < now->size() ? &(*now)[i] : nullptr;
      const json* y = i < before->size() ? &(*before)[i] : nullptr;
      std::string d = firstDifference(x, y, path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
    return "";
  }
  return *now == *before ? "" : path;
}

void checkReleasedContent(const json* release, const json* oldRelease,
                          std::vector<std::string>& out) {
  if (oldRelease == nullptr || !releaseLeftPending(oldRelease)) return;
  const std::string phase = ja::strOr(ja::at(oldRelease, {"status", "phase"}));
  const json* spec = ja::child(release, "spec");
  const json* oldSpec = ja::child(oldRelease, "spec");
  for (const char* field : {"model", "stages"}) {
    const json* now = ja::child(spec, field);
    const json* before = ja::child(oldSpec, field);
    std::string where = firstDifference(now, before, std::string("spec.") + field);
    if (where.empty()) continue;
    // Describe the leaf that changed (its old and new value).
    const json* x = now;
    const json* y = before;
    std::string rest = where.substr(std::string("spec.").size() + std::string(field).size());
    for (size_t i = 0; i < rest.size() && (x != nullptr || y != nullptr);) {
      if (rest[i] == '.') {
        size_t j = rest.find_first_of(".[", i + 1);
        std::string key =
            rest.substr(i + 1, j == std::string::npos ? std::string::npos : j - i - 1);
        x = ja::child(x, key);
        y = ja::child(y, key);
        i = j == std::string::npos ? rest.size() : j;
      } else if (rest[i] == '[') {
        size_t j = rest.find(']', i);
        size_t idx = std::stoul(rest.substr(i + 1, j - i - 1));
        x = x != nullptr && x->is_array() && idx < x->size() ? &(*x)[idx] : nullptr;
        y = y != nullptr && y->is_array() && idx < y->size() ? &(*y)[idx] : nullptr;
        i = j + 1;
      } else {
        break;
      }
    }
    out.push_back(where + ": field is immutable once the release has left Pending (phase " + phase +
                  "; was " + describeReleaseImmutability(y) + ", now " +
                  describeReleaseImmutability(x) +
                  "): what is validated cannot change; create a new ModelRelease instead");
  }
}

}  // namespace lockstep::webhooks
