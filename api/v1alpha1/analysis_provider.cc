#include "api/v1alpha1/analysis_provider.h"

#include "api/v1alpha1/model_release.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

std::string quote(const std::string& s) { return "\"" + s + "\""; }

Status bad(const std::string& field, const std::string& why) {
  return Status(Code::kInvalidArgument, "spec." + field + ": " + why);
}

// A reference {name, key}: name required, key defaulted.
StatusOr<std::optional<KeyRef>> keyRef(const json& spec, const std::string& field,
                                       const char* defaultKey) {
  const json* r = decode::member(spec, field);
  if (r == nullptr || r->is_null()) return std::optional<KeyRef>();
  if (!r->is_object()) return bad(field, "must be an object {name, key}");
  KeyRef out;
  out.name = decode::string(*r, "name");
  out.key = decode::string(*r, "key");
  if (out.name.empty()) return bad(field + ".name", "is required");
  if (decode::member(*r, "namespace") != nullptr)
    return bad(field + ".namespace",
               "is not accepted: the object is always read in the operator's namespace");
  if (out.key.empty()) out.key = defaultKey;
  return std::optional<KeyRef>(out);
}

bool hasControlOrSpace(const std::string& s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return true;
  }
  return false;
}

}  // namespace

AnalysisProvider decodeAnalysisProviderObject(const json& object) {
  AnalysisProvider p;
  p.meta = decodeMeta(object);
  p.resourceVersion = decode::string(decode::object(object, "metadata"), "resourceVersion");
  p.spec = decode::object(object, "spec");
  p.status = decode::object(object, "status");
  return p;
}

StatusOr<AnalysisProviderSpec> decodeAnalysisProviderSpec(const json& spec) {
  AnalysisProviderSpec out;
  out.address = decode::string(spec, "address");
  out.allowInsecureHttp = decode::boolean(spec, "allowInsecureHttp", false);
  if (out.address.empty()) return bad("address", "is required");
  if (hasControlOrSpace(out.address))
    return bad("address", quote(out.address) + " contains spaces or control characters");
  const bool https = out.address.rfind("https://", 0) == 0;
  const bool http = out.address.rfind("http://", 0) == 0;
  if (!https && !http) return bad("address", quote(out.address) + " must start with https://");
  if (http && !out.allowInsecureHttp)
    return bad("address", quote(out.address) +
                              " is plain http: queries and the bearer token would cross the "
                              "network in clear text; use https, or set spec.allowInsecureHttp: "
                              "true to accept that");
  out.caBundle = decode::string(spec, "caBundle");
  auto ca = keyRef(spec, "caConfigMapRef", kDefaultCaKey);
  if (!ca.isOk()) return ca.status();
  out.caConfigMapRef = *ca;
  auto token = keyRef(spec, "bearerTokenSecretRef", kDefaultTokenKey);
  if (!token.isOk()) return token.status();
  out.bearerTokenSecretRef = *token;
  if (!out.caBundle.empty() && out.caConfigMapRef)
    return bad("caBundle", "give caBundle or caConfigMapRef, not both");
  if (!out.caBundle.empty() &&
      out.caBundle.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    return bad("caBundle", "holds no PEM certificate");
  if (http && (!out.caBundle.empty() || out.caConfigMapRef))
    return bad(out.caBundle.empty() ? "caConfigMapRef" : "caBundle",
               "is set but spec.address is http, not https");
  if (http && out.bearerTokenSecretRef)
    return bad("bearerTokenSecretRef",
               "a bearer token is only sent over https (it would cross the network in clear "
               "text); use an https address");
  if (std::string t = decode::string(spec, "timeout"); !t.empty()) {
    auto v = parseStageDuration(t);
    if (!v || *v < 1) return bad("timeout", quote(t) + " is not a duration of at least 1s");
    if (*v > kMaxProviderTimeoutSeconds)
      return bad("timeout",
                 quote(t) + " is more than " + std::to_string(kMaxProviderTimeoutSeconds) + "s");
    out.timeoutSeconds = *v;
  }
  out.maxConcurrentQueries =
      decode::integer(spec, "maxConcurrentQueries", kDefaultProviderConcurrency);
  if (out.maxConcurrentQueries < 1 || out.maxConcurrentQueries > kMaxProviderConcurrency)
    return bad("maxConcurrentQueries", "must be between 1 and " +
                                           std::to_string(kMaxProviderConcurrency) + ", got " +
                                           std::to_string(out.maxConcurrentQueries));
  if (const json* sel = decode::member(spec, "namespaceSelector");
      sel != nullptr && !sel->is_null()) {
    auto selector = decodeLabelSelector(*sel, "spec.namespaceSelector");
    if (!selector.isOk()) return selector.status();
    out.namespaceSelector = std::move(*selector);
  }
  out.allowFreeFormQueries = decode::boolean(spec, "allowFreeFormQueries", false);
  return out;
}

bool providerServes(const AnalysisProviderSpec& spec,
                    const std::map<std::string, std::string>& nsLabels) {
  return spec.namespaceSelector && selectorMatches(*spec.namespaceSelector, nsLabels);
}

std::string providerRefusal(const std::string& provider, const AnalysisProviderSpec& spec,
                            const std::string& ns) {
  if (!spec.namespaceSelector)
    return "AnalysisProvider " + quote(provider) + " serves no namespace (it has no " +
           "spec.namespaceSelector), so not namespace " + quote(ns) +
           "; the platform opens it to namespaces with spec.namespaceSelector";
  return "AnalysisProvider " + quote(provider) + " does not serve namespace " + quote(ns) +
         ": the namespace's labels do not match its spec.namespaceSelector (" +
         describeSelector(*spec.namespaceSelector) + ")";
}

}  // namespace lockstep::api::v1alpha1
