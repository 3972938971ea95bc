#include "webhooks/admission/admission_review.h"

#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {
namespace {

namespace ja = json_access;
using nlohmann::json;

constexpr std::string_view kApiVersion = "admission.k8s.io/v1";
constexpr std::string_view kKind = "AdmissionReview";
// Kubernetes truncates long warnings anyway; bounding them keeps responses small.
constexpr std::size_t kMaxWarnings = 32;
constexpr std::size_t kMaxWarningBytes = 1024;
constexpr std::size_t kMaxMessageBytes = 8192;

std::string truncate(std::string s, std::size_t max) {
  if (s.size() <= max) return s;
  s.resize(max - 3);
  // Do not leave half a UTF-8 sequence behind.
  while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
  if (!s.empty() && (static_cast<unsigned char>(s.back()) & 0x80) != 0) s.pop_back();
  return s + "...";
}

// request.userInfo; fields of the wrong type read as absent (the API server
// always sends them well-formed; this input is still untrusted).
UserInfo decodeUserInfo(const json* info) {
  UserInfo u;
  u.username = ja::strOr(ja::child(info, "username"));
  u.uid = ja::strOr(ja::child(info, "uid"));
  if (const json* groups = ja::child(info, "groups"); ja::isArray(groups)) {
    for (const json& g : *groups) {
      if (g.is_string()) u.groups.push_back(g.get<std::string>());
    }
  }
  if (const json* extra = ja::child(info, "extra"); extra != nullptr && extra->is_object()) {
    for (const auto& [key, values] : extra->items()) {
      std::vector<std::string>& out = u.extra[key];
      if (!values.is_array()) continue;
      for (const json& v : values) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
  }
  return u;
}

}  // namespace

bool jsonNestedDeeperThan(std::string_view body, int limit) {
  int depth = 0;
  bool inString = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (inString) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

StatusOr<AdmissionRequest> decodeAdmissionReview(std::string_view body) {
  if (body.empty()) return invalidArgument("empty request body");
  if (jsonNestedDeeperThan(body, kMaxJsonDepth))
    return invalidArgument("request body nested deeper than " + std::to_string(kMaxJsonDepth));
  // No parser callback: a per-event std::function made the DOM parser's
  // callback variant the largest cost of a request (docs/benchmarks.md).
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalidArgument("request body is not valid JSON");
  if (!doc.is_object()) return invalidArgument("request body is not a JSON object");

  const std::string* apiVersion = ja::str(ja::child(&doc, "apiVersion"));
  const std::string* kind = ja::str(ja::child(&doc, "kind"));
  if (kind == nullptr || *kind != kKind) return invalidArgument("kind is not AdmissionReview");
  if (apiVersion == nullptr || *apiVersion != kApiVersion) {
    return invalidArgument("apiVersion must be admission.k8s.io/v1");
  }
  json* request = nullptr;
  if (auto it = doc.find("request"); it != doc.end() && it->is_object()) request = &*it;
  if (request == nullptr) return invalidArgument("AdmissionReview has no request");

  AdmissionRequest out;
  const std::string* uid = ja::str(ja::child(request, "uid"));
  if (uid == nullptr || uid->empty()) return invalidArgument("request.uid is missing");
  if (uid->size() > 256) return invalidArgument("request.uid is too long");
  out.uid = *uid;
  out.kind.group = ja::strOr(ja::at(request, {"kind", "group"}));
  out.kind.version = ja::strOr(ja::at(request, {"kind", "version"}));
  out.kind.kind = ja::strOr(ja::at(request, {"kind", "kind"}));
  out.resource = ja::strOr(ja::at(request, {"resource", "resource"}));
  out.subResource = ja::strOr(ja::child(request, "subResource"));
  out.name = ja::strOr(ja::child(request, "name"));
  out.ns = ja::strOr(ja::child(request, "namespace"));
  out.userName = ja::strOr(ja::at(request, {"userInfo", "username"}));
  out.user = decodeUserInfo(ja::child(request, "userInfo"));
  const std::string* op = ja::str(ja::child(request, "operation"));
  if (op == nullptr) return invalidArgument("request.operation is missing");
  out.operation = parseOperation(*op);
  if (const json* dry = ja::child(request, "dryRun"); dry != nullptr && dry->is_boolean()) {
    out.dryRun = dry->get<bool>();
  }
  for (auto [key, field] :
       {std::pair{"object", &out.object}, std::pair{"oldObject", &out.oldObject}}) {
    auto it = request->find(key);
    if (it == request->end() || it->is_null()) continue;
    if (!it->is_object())
      return invalidArgument(std::string("request.") + key + " is not an object");
    *field = std::move(*it);  // avoids copying the (possibly large) object
  }
  return out;
}

std::string encodeAdmissionReview(const AdmissionResponse& r) {
  json response = {{"uid", r.uid}, {"allowed", r.allowed}};
  if (r.code != 0 || !r.message.empty()) {
    json status = json::object();
    status["status"] = r.allowed ? "Success" : "Failure";
    if (r.code != 0) status["code"] = r.code;
    if (!r.reason.empty()) status["reason"] = r.reason;
    if (!r.message.empty()) status["message"] = truncate(r.message, kMaxMessageBytes);
    response["status"] = std::move(status);
  }
  if (!r.warnings.empty()) {
    json warnings = json::array();
    for (std::size_t i = 0; i < r.warnings.size() && i < kMaxWarnings; ++i) {
      warnings.push_back(truncate(r.warnings[i], kMaxWarningBytes));
    }
    response["warnings"] = std::move(warnings);
  }
  if (!r.auditAnnotations.empty()) {
    json annotations = json::object();
    for (const auto& [k, v] : r.auditAnnotations) annotations[k] = truncate(v, kMaxMessageBytes);
    response["auditAnnotations"] = std::move(annotations);
  }
  json review = {{"apiVersion", kApiVersion}, {"kind", kKind}, {"response", std::move(response)}};
  // Input strings may carry invalid UTF-8: replace rather than throw.
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

AdmissionResponse responseFromVerdict(std::string uid, const Verdict& v) {
  AdmissionResponse r;
  r.uid = std::move(uid);
  r.allowed = v.allowed();
  r.warnings = v.warnings;
  if (!r.allowed) {
    r.code = v.code;
    r.reason = v.reason;
    r.message = v.message;
  } else if (v.decision == Decision::kAudited && !v.message.empty()) {
    // The API server prefixes the key with the webhook name in the audit log.
    r.auditAnnotations["closure-violation"] = v.message;
  }
  return r;
}

}  // namespace lockstep::webhooks
