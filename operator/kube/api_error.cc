#include "operator/kube/api_error.h"

#include <cctype>

namespace lockstep::kube {

Status statusFromStatusObject(const nlohmann::json& st, int httpStatus) {
  std::string reason, message;
  int code = httpStatus;
  if (st.is_object()) {
    if (auto it = st.find("reason"); it != st.end() && it->is_string()) reason = *it;
    if (auto it = st.find("message"); it != st.end() && it->is_string()) message = *it;
    if (auto it = st.find("code"); it != st.end() && it->is_number_integer() && code == 0)
      code = *it;
    if (st.value("status", "") == "Success" && (code == 0 || (code >= 200 && code < 300))) {
      return Status::ok();
    }
  }
  if (message.empty()) {
    message = "HTTP " + std::to_string(code) + (reason.empty() ? "" : " " + reason);
  }
  // A server-side apply of a field the installed CustomResourceDefinition does not
  // declare: the CRD is older than the operator (`helm upgrade` never updates a chart's
  // crds/). Retried like any 500, so the write succeeds once the CRDs are applied.
  if (message.find("field not declared in schema") != std::string::npos) {
    message +=
        " (the CustomResourceDefinition in the cluster is older than this operator: "
        "apply the crds/ of this version; helm upgrade does not update CRDs)";
  }
  // The reason is authoritative where it is specific; the code decides otherwise.
  if (reason == "Expired" || reason == "Gone") return {Code::kGone, message};
  if (reason == "AlreadyExists") return {Code::kAlreadyExists, message};
  if (reason == "Conflict") return {Code::kConflict, message};
  if (reason == "NotFound") return {Code::kNotFound, message};
  if (reason == "Invalid") return {Code::kInvalid, message};
  if (reason == "Forbidden") return {Code::kForbidden, message};
  if (reason == "Unauthorized") return {Code::kUnauthorized, message};
  // "Too large resource version": the server's cache is behind; like client-go, treat the
  // resourceVersion as unusable so a reflector relists from a quorum read.
  if (st.is_object() && st.contains("details") && st["details"].is_object()) {
    for (const auto& cause : st["details"].value("causes", nlohmann::json::array())) {
      if (cause.is_object() && cause.value("reason", "") == "ResourceVersionTooLarge") {
        return {Code::kGone, message};
      }
    }
  }
  switch (code) {
    case 400:
      return {Code::kInvalidArgument, message};
    case 401:
      return {Code::kUnauthorized, message};
    case 403:
      return {Code::kForbidden, message};
    case 404:
      return {Code::kNotFound, message};
    case 409:
      return {Code::kConflict, message};
    case 410:
      return {Code::kGone, message};
    case 422:
      return {Code::kInvalid, message};
    case 429:
      return {Code::kUnavailable, message};
    default:
      break;
  }
  if (code >= 500) return {Code::kUnavailable, message};
  if (code >= 400) return {Code::kInvalidArgument, message};
  return {Code::kInternal, "unexpected response: " + message};
}

Status statusFromResponse(int httpStatus, const std::string& body) {
  if (httpStatus >= 200 && httpStatus < 300) return Status::ok();
  nlohmann::json st = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (st.is_discarded() || !st.is_object() || st.value("kind", "") != "Status") {
    std::string snippet = body.substr(0, 200);
    while (!snippet.empty() && std::isspace(static_cast<unsigned char>(snippet.back())))
      snippet.pop_back();
    st = nlohmann::json{{"message", "HTTP " + std::to_string(httpStatus) +
                                        (snippet.empty() ? "" : ": " + snippet)}};
  }
  return statusFromStatusObject(st, httpStatus);
}

bool isRetryable(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded;
}

bool isTransient(const Status& s) {
  return isRetryable(s) || s.code() == Code::kConflict || s.code() == Code::kInternal ||
         s.code() == Code::kGone;
}

}  // namespace lockstep::kube
