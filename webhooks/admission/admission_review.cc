#include "webhooks/admission/admission_review.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>

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
// A thread's parser keeps the buffers of the largest body it has seen; past
// this it gives them back, so one huge request does not pin memory for good.
constexpr std::size_t kRetainedParserCapacity = 1 << 20;
constexpr std::size_t kInitialParserCapacity = std::size_t{64} * 1024;

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

namespace dom = simdjson::dom;

// One parser per server thread: its buffers are reused by every request.
dom::parser& threadParser() {
  thread_local dom::parser parser;
  return parser;
}

// The JSON value `e` as nlohmann::json, pruned by `mask` (see FieldMask):
// nullptr or `true` keeps everything. Duplicate keys: the last one wins, as
// with nlohmann's own parser. Recursion is bounded by the parser's depth limit.
json toJson(dom::element e, const json* mask) {
  const bool prune = mask != nullptr && mask->is_object();
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      json out = json::object();
      for (dom::key_value_pair field : dom::object(e)) {
        const json* sub = nullptr;
        if (prune) {
          auto it = mask->find(field.key);
          if (it == mask->end() || (it->is_boolean() && !it->get<bool>())) continue;
          sub = &*it;
        }
        out[std::string(field.key)] = toJson(field.value, sub);
      }
      return out;
    }
    case dom::element_type::ARRAY: {
      json out = json::array();
      for (dom::element item : dom::array(e)) out.push_back(toJson(item, mask));
      return out;
    }
    case dom::element_type::STRING:
      return std::string(e.get_string().value_unsafe());
    case dom::element_type::INT64:
      return e.get_int64().value_unsafe();
    case dom::element_type::UINT64:
      return e.get_uint64().value_unsafe();
    case dom::element_type::DOUBLE:
      return e.get_double().value_unsafe();
    case dom::element_type::BOOL:
      return e.get_bool().value_unsafe();
    case dom::element_type::NULL_VALUE:
      return nullptr;
  }
  return nullptr;
}

// The review as nlohmann::json: everything, except that request.object and
// request.oldObject are pruned by `objectMask`.
json reviewToJson(dom::element root, const FieldMask* objectMask) {
  json doc = json::object();
  for (dom::key_value_pair field : dom::object(root)) {
    if (field.key != "request" || !field.value.is_object()) {
      doc[std::string(field.key)] = toJson(field.value, nullptr);
      continue;
    }
    json request = json::object();
    for (dom::key_value_pair member : dom::object(field.value)) {
      const bool isObject = member.key == "object" || member.key == "oldObject";
      request[std::string(member.key)] = toJson(member.value, isObject ? objectMask : nullptr);
    }
    doc["request"] = std::move(request);
  }
  return doc;
}

// Parses `body` with the thread's parser (depth limit kMaxJsonDepth) into
// nlohmann::json; the errors name what was wrong.
StatusOr<json> parseReview(std::string_view body, const FieldMask* objectMask) {
  dom::parser& parser = threadParser();
  if (parser.max_depth() != static_cast<std::size_t>(kMaxJsonDepth) ||
      parser.capacity() > kRetainedParserCapacity) {
    if (parser.allocate(kInitialParserCapacity, kMaxJsonDepth) != simdjson::SUCCESS)
      return resourceExhausted("no memory for the JSON parser");
  }
  dom::element root;
  const simdjson::error_code err = parser.parse(body.data(), body.size()).get(root);
  if (err == simdjson::DEPTH_ERROR ||
      (err != simdjson::SUCCESS && jsonNestedDeeperThan(body, kMaxJsonDepth))) {
    return invalidArgument("request body nested deeper than " + std::to_string(kMaxJsonDepth));
  }
  if (err != simdjson::SUCCESS) {
    return invalidArgument(std::string("request body is not valid JSON: ") +
                           simdjson::error_message(err));
  }
  if (!root.is_object()) return invalidArgument("request body is not a JSON object");
  return reviewToJson(root, objectMask);
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

StatusOr<AdmissionRequest> decodeAdmissionReview(std::string_view body,
                                                 const FieldMask* objectMask) {
  if (body.empty()) return invalidArgument("empty request body");
  StatusOr<json> parsed = parseReview(body, objectMask);
  if (!parsed.isOk()) return parsed.status();
  json& doc = *parsed;

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
  if (r.allowed && r.code == 0 && r.message.empty() && r.warnings.empty() &&
      r.auditAnnotations.empty() && r.patch.empty()) {
    // The answer to almost every request, written without a DOM: the same
    // bytes as below (nlohmann writes members in key order).
    std::string out = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                      R"("response":{"allowed":true,"uid":)";
    out += json(r.uid).dump(-1, ' ', false, json::error_handler_t::replace);
    out += "}}";
    return out;
  }
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
  if (!r.patch.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = base64(r.patch);
  }
  json review = {{"apiVersion", kApiVersion}, {"kind", kKind}, {"response", std::move(response)}};
  // Input strings may carry invalid UTF-8: replace rather than throw.
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (n > 1) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (n > 2) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 2]));
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += n > 1 ? kAlphabet[(v >> 6) & 63] : '=';
    out += n > 2 ? kAlphabet[v & 63] : '=';
  }
  return out;
}

AdmissionResponse responseFromVerdict(std::string uid, const Verdict& v) {
  AdmissionResponse r;
  r.uid = std::move(uid);
  r.allowed = v.allowed();
  r.warnings = v.warnings;
  if (r.allowed) r.patch = v.patch;
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
