// The one mapping from an API server response (HTTP status + metav1.Status
// body) to a lockstep::Code, so every caller classifies errors the same way:
// 404 NotFound, 409 AlreadyExists/Conflict, 410 or reason Expired Gone,
// 422 Invalid, 401/403, 429 and 5xx Unavailable.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::kube {

// OK for 2xx; otherwise the mapped error with the server's message.
Status statusFromResponse(int httpStatus, const std::string& body);
// Maps a decoded metav1.Status object (also the object of a watch ERROR event).
Status statusFromStatusObject(const nlohmann::json& status, int httpStatus = 0);
// True when retrying the same call later may succeed (Unavailable, DeadlineExceeded).
bool isRetryable(const Status& s);
// True when a reconcile that failed with `s` should simply be re-queued with
// back-off and not be reported on the object: retryable errors, a Conflict (a
// write planned from a stale cache), Gone (an expired resourceVersion) and
// Internal (an API server 500, e.g. an admission plugin's failure). Everything
// else (Invalid, Forbidden, NotFound, ...) is the object's or the install's
// problem and is surfaced.
bool isTransient(const Status& s);

}  // namespace lockstep::kube
