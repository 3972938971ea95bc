// AdmissionReview admission.k8s.io/v1: decoding requests and encoding responses.
// Pure: no I/O. Malformed input yields a Status (the server answers 400), never
// an exception. Thread-safety: pure functions and values (the decoder keeps one
// reusable parser per thread).
//
// Decoding is this project's only use of simdjson (the adapter): the body is
// validated whole by simdjson's DOM parser (UTF-8, grammar, depth), then the
// envelope and the parts of request.object / oldObject a webhook reads are
// copied into nlohmann::json, which the validators use. A pod webhook reads a
// dozen fields of objects that can be 100 KB; building nlohmann's DOM of the
// whole body was ~70 % of a request (docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "webhooks/admission/authorizer.h"
#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

// Deeper JSON than this is rejected before it is materialized (Kubernetes
// objects are shallow; deep nesting only serves to exhaust the stack).
inline constexpr int kMaxJsonDepth = 64;

// True when `body` opens more than `limit` objects/arrays inside one another
// (brackets inside strings do not count). A linear scan before parsing, so the
// parser runs without a per-event callback. Malformed JSON may scan either way;
// the parser rejects it next.
bool jsonNestedDeeperThan(std::string_view body, int limit);

struct GroupVersionKind {
  std::string group;
  std::string version;
  std::string kind;
};

struct AdmissionRequest {
  std::string uid;
  GroupVersionKind kind;    // request.kind
  std::string resource;     // request.resource.resource, e.g. "pods"
  std::string subResource;  // e.g. "ephemeralcontainers", "status"
  std::string name;         // empty on CREATE with generateName
  std::string ns;           // request.namespace
  Operation operation = Operation::kUnknown;
  std::string userName;  // request.userInfo.username (for logs)
  UserInfo user;         // request.userInfo: username, uid, groups, extra
  bool dryRun = false;
  nlohmann::json object;     // null when absent (DELETE)
  nlohmann::json oldObject;  // null when absent (CREATE)
};

struct AdmissionResponse {
  std::string uid;
  bool allowed = true;
  int code = 0;         // status.code; 0 = no status block
  std::string reason;   // status.reason
  std::string message;  // status.message
  std::vector<std::string> warnings;
  std::map<std::string, std::string> auditAnnotations;
  // A JSON Patch (RFC 6902) document for the API server to apply (mutating
  // webhooks); "" = none. Encoded as patchType JSONPatch, patch base64.
  std::string patch;
};

// Which parts of request.object / oldObject to keep, as JSON: an object whose
// members name fields; `true` keeps the field's whole value, an object keeps
// only its own named members. A mask object applied to an array applies to
// each element; scalars are kept as they are, so a validator sees the same
// types it would in the whole object. Example (keep labels and each
// container's name): {"metadata":{"labels":true},"spec":{"containers":{"name":true}}}.
using FieldMask = nlohmann::json;

// Parses a request body. Errors (kInvalidArgument): empty body, not JSON
// (with simdjson's reason), too deep, not an AdmissionReview
// admission.k8s.io/v1, missing request or uid, non-object `object`/`oldObject`.
// Numbers that fit neither a 64-bit integer nor a finite double are not JSON
// this decoder accepts (the API server never sends them).
// `objectMask`: when given, request.object and oldObject keep only its fields
// (the rest of the request is always kept whole); nullptr keeps them whole.
StatusOr<AdmissionRequest> decodeAdmissionReview(std::string_view body,
                                                 const FieldMask* objectMask = nullptr);

// Builds the response AdmissionReview (apiVersion/kind echo v1, uid echoed).
std::string encodeAdmissionReview(const AdmissionResponse& response);

// Standard base64 (RFC 4648 section 4, with padding) of `bytes`: the
// encoding of AdmissionResponse.patch.
std::string base64(std::string_view bytes);

// Maps a validator verdict to a response for `uid`.
AdmissionResponse responseFromVerdict(std::string uid, const Verdict& verdict);

}  // namespace lockstep::webhooks
