#include "api/v1alpha1/label_selector.h"

#include <algorithm>

#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

Status badLabelSelector(const std::string& field, const std::string& why) {
  return invalidArgument(field + ": " + why);
}

std::string indexed(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

std::string shown(const json& v) {
  return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

StatusOr<std::string> requiredString(const json& parent, const std::string& key,
                                     const std::string& field) {
  const json* v = decode::member(parent, key);
  if (v == nullptr) return badLabelSelector(field, "is required");
  if (!v->is_string() || v->get<std::string>().empty())
    return badLabelSelector(field, "must be a non-empty string");
  return v->get<std::string>();
}

}  // namespace

bool selectorMatches(const LabelSelector& selector,
                     const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : selector.matchLabels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const LabelRequirement& r : selector.matchExpressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool listed =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if ((r.op == "In" && !listed) || (r.op == "NotIn" && listed) || (r.op == "Exists" && !has) ||
        (r.op == "DoesNotExist" && has))
      return false;
  }
  return true;
}

StatusOr<LabelSelector> decodeLabelSelector(const json& s, const std::string& field) {
  if (!s.is_object())
    return badLabelSelector(field, "must be a label selector {matchLabels, matchExpressions}");
  LabelSelector out;
  if (const json* labels = decode::member(s, "matchLabels"); labels != nullptr) {
    if (!labels->is_object())
      return badLabelSelector(field + ".matchLabels", "must be a map of strings");
    for (const auto& [k, v] : labels->items()) {
      if (!v.is_string()) return badLabelSelector(field + ".matchLabels." + k, "must be a string");
      out.matchLabels[k] = v.get<std::string>();
    }
  }
  const json* exprs = decode::member(s, "matchExpressions");
  if (exprs == nullptr) return out;
  if (!exprs->is_array()) return badLabelSelector(field + ".matchExpressions", "must be a list");
  for (size_t i = 0; i < exprs->size(); ++i) {
    const std::string f = indexed(field + ".matchExpressions", i);
    const json& e = (*exprs)[i];
    if (!e.is_object()) return badLabelSelector(f, "must be an object {key, operator, values}");
    LabelRequirement r;
    auto key = requiredString(e, "key", f + ".key");
    if (!key.isOk()) return key.status();
    r.key = *key;
    auto op = requiredString(e, "operator", f + ".operator");
    if (!op.isOk()) return op.status();
    r.op = *op;
    const bool withValues = r.op == "In" || r.op == "NotIn";
    if (!withValues && r.op != "Exists" && r.op != "DoesNotExist")
      return badLabelSelector(
          f + ".operator", shown(e.at("operator")) + " is not In, NotIn, Exists or DoesNotExist");
    if (const json* values = decode::member(e, "values"); values != nullptr) {
      if (!values->is_array()) return badLabelSelector(f + ".values", "must be a list of strings");
      for (size_t j = 0; j < values->size(); ++j) {
        if (!(*values)[j].is_string())
          return badLabelSelector(indexed(f + ".values", j), "must be a string");
        r.values.push_back((*values)[j].get<std::string>());
      }
    }
    if (withValues && r.values.empty())
      return badLabelSelector(f + ".values", "must list at least one value for operator " + r.op);
    if (!withValues && !r.values.empty())
      return badLabelSelector(f + ".values", "must be empty for operator " + r.op);
    out.matchExpressions.push_back(std::move(r));
  }
  return out;
}

std::string describeSelector(const LabelSelector& selector) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ",") + part; };
  for (const auto& [k, v] : selector.matchLabels) add(k + "=" + v);
  for (const LabelRequirement& r : selector.matchExpressions) {
    if (r.op == "Exists") {
      add(r.key);
    } else if (r.op == "DoesNotExist") {
      add("!" + r.key);
    } else {
      std::string values;
      for (const std::string& v : r.values) values += (values.empty() ? "" : ", ") + v;
      add(r.key + (r.op == "In" ? " in (" : " notin (") + values + ")");
    }
  }
  return out.empty() ? "{} (every namespace)" : out;
}

}  // namespace lockstep::api::v1alpha1
