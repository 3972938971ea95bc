// AnalysisTemplate (cluster-scoped, lockstep.dev/v1alpha1): a PromQL query the
// platform writes, with named, typed arguments (Argo Rollouts'
// ClusterAnalysisTemplate and Flagger's MetricTemplate play the same part). A
// release names a template and passes only its declared arguments; the
// operator fills the release's own series selectors itself, so a tenant's
// measurement never reads another namespace's series (docs/rollouts.md
// "Analysis templates").
//
//   spec:
//     query: sum(rate(http_requests_total{ {{selector}}, code=~{{args.codes}} }[{{args.window}}]))
//     args:
//     - {name: window, type: duration, default: 1m}
//     - {name: codes, type: string, default: "5..", pattern: "[0-9.|]+"}
//
// Placeholders, filled by the operator (never by the release):
//   {{selector}}   namespace="<ns>",model="<model>",release="<release>",track="canary"
//   {{namespace}} {{model}} {{release}} {{track}}   each a quoted PromQL string
//   {{pod}}        a quoted regex of the canary's pods ("<model>-canary-.*", for =~)
//   {{args.NAME}}  a declared argument: a `string` as a quoted, escaped PromQL
//                  string literal; a `duration` or `number` as itself, after
//                  its character set is checked.
// The query must use {{selector}} or {{namespace}}: a template that does not
// pin the namespace is refused.
// Thread-safety: values and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::api::v1alpha1 {

inline constexpr size_t kMaxTemplateArgLength = 256;

enum class TemplateArgType { kString, kDuration, kNumber };
const char* templateArgTypeName(TemplateArgType t);

struct TemplateArg {
  std::string name;
  TemplateArgType type = TemplateArgType::kString;
  std::optional<std::string> defaultValue;  // none: the release must give it
  std::string pattern;                      // string: an ECMAScript regex the whole value matches
};

struct AnalysisTemplateSpec {
  std::string query;
  std::vector<TemplateArg> args;
};

// The spec checked: InvalidArgument naming the field ("spec.args[1].type: ...").
StatusOr<AnalysisTemplateSpec> decodeAnalysisTemplateSpec(const nlohmann::json& spec);

// What the operator fills in: the release being measured.
struct TemplateContext {
  std::string ns, model, release;
  std::string track = "canary";
};

// The release's arguments checked against the template's declarations
// (every one declared, of its type, within its pattern; defaults filled in).
// InvalidArgument naming `where` + ".args.<name>" (`where`: the release's
// "...analysis.prometheus").
StatusOr<std::map<std::string, std::string>> checkTemplateArgs(
    const AnalysisTemplateSpec& spec, const std::map<std::string, std::string>& given,
    const std::string& where);

// The query to send: the template with its placeholders filled.
// `args` as checkTemplateArgs returned them.
std::string renderAnalysisTemplate(const AnalysisTemplateSpec& spec,
                                   const std::map<std::string, std::string>& args,
                                   const TemplateContext& context);

// `s` as a PromQL double-quoted string literal: \ " and control characters escaped.
std::string promqlString(const std::string& s);

}  // namespace lockstep::api::v1alpha1
