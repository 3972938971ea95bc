// The mutating half of separation of duties: on CREATE the ModelRelease
// mutating webhook records who created the release, from the request's
// userInfo, in metadata.annotations["lockstep.dev/created-by"]
// (api/v1alpha1/approval.h). It answers with a JSON Patch (RFC 6902) that the
// API server applies before the validating webhook runs; a value the client
// already wrote is left alone for the validating webhook, which refuses any
// value but the requesting user's name (webhooks/admission/approval_policy.h).
// UPDATE, DELETE and subresources never get a creator: it is written once,
// and no UPDATE may change it.
// The same webhook records each approver's groups (issue 29): for every
// approve.lockstep.dev/<stage>[.<k>] annotation a CREATE or UPDATE adds or
// changes, it writes approver-groups.lockstep.dev/<stage>[.<k>] with
// request.userInfo.groups as a JSON array (replacing whatever the client
// wrote), and removes a groups annotation whose approval is gone. The
// validating webhook refuses a groups annotation that is not the approver's.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "webhooks/admission/admission_review.h"

namespace lockstep::webhooks {

// One reference token of a JSON Pointer (RFC 6901 section 3): "~" is written
// "~0" and "/" is written "~1" ("lockstep.dev/created-by" ->
// "lockstep.dev~1created-by").
std::string jsonPointerToken(std::string_view key);

// The JSON Patch (an array, empty when nothing is to change) that records the
// creator of the release in `request`. Bad input is an error naming the field
// (kInvalidArgument): a CREATE without an object, a `metadata` or
// `metadata.annotations` that is not an object, an empty
// request.userInfo.username.
StatusOr<nlohmann::json> creatorPatch(const AdmissionRequest& request);

// The JSON Patch operations that record the approvers' groups (see above), to
// be applied after creatorPatch's (which may add metadata.annotations). Empty
// for DELETE, subresources and writes that add or change no approval and
// leave no stale groups annotation.
nlohmann::json approverGroupsPatch(const AdmissionRequest& request);

}  // namespace lockstep::webhooks
