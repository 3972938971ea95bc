// The result of one Prometheus instant query (`GET /api/v1/query`), decoded
// from the HTTP status and body without I/O, and classified for the canary
// analysis (docs/rollouts.md "The analysis provider").
//
// A query gives either one finite value or an error. Every error counts as an
// analysis *error* (Argo Rollouts' Error phase: toward consecutiveErrorLimit,
// never toward count); only a value outside [min, max] is a *failure*, and that
// comparison is the planner's (controllers/modelrelease/canary_plan.h). The
// kinds below only tell the errors apart for messages, logs and metrics.
//
// Accepted results: a scalar, or an instant vector with exactly one float
// sample. Refused, each with a message saying what to change: an empty vector,
// a vector of several series, a matrix (a range selector as the whole query),
// a string, a native-histogram sample, and NaN or +-Inf values.
// Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::prometheus {

enum class ErrorKind {
  kNone = 0,
  kUnreachable,      // connection refused, DNS, TLS handshake or verification
  kTimeout,          // no answer within the query's timeout
  kHttp,             // non-2xx status without a Prometheus error body (a proxy, a 404)
  kQuery,            // Prometheus answered status "error" (bad_data, execution, timeout, ...)
  kBadResponse,      // not JSON, or JSON not shaped like the query API's answer
  kEmpty,            // an empty vector: no series matched
  kMultipleSeries,   // more than one series: the query must be aggregated to one value
  kUnsupportedType,  // matrix, string, or a native-histogram sample
  kNotFinite,        // NaN, +Inf or -Inf (e.g. 0/0 when there was no traffic)
  kConfig,           // the client could not build the request (token file unreadable)
};

// "unreachable", "timeout", "http", "query", "bad-response", "empty",
// "multiple-series", "unsupported-type", "not-finite", "config" (stable: metric labels).
const char* errorKindName(ErrorKind k);

struct QueryResult {
  std::optional<double> value;  // set exactly when kind == kNone; always finite
  ErrorKind kind = ErrorKind::kNone;
  std::string error;                  // one line: what happened and what to change
  std::string errorType;              // Prometheus' errorType for kQuery ("bad_data", ...)
  int httpStatus = 0;                 // 0 when no HTTP answer arrived
  std::vector<std::string> warnings;  // Prometheus' "warnings", passed on for logs

  bool ok() const { return kind == ErrorKind::kNone; }
  static QueryResult ofValue(double v);
  static QueryResult ofError(ErrorKind kind, std::string message);
};

// Bodies larger than this are refused as kBadResponse before parsing: one
// value never needs more, and a huge vector means the query is wrong.
inline constexpr size_t kMaxResponseBytes = size_t{4} * 1024 * 1024;

// Decodes Prometheus' answer to an instant query: the HTTP status and body as
// received. Never throws.
QueryResult decodeQueryResponse(int httpStatus, std::string_view body);

// Parses a Prometheus sample value ("0.5", "1e-3", "NaN", "+Inf", "-Inf").
// nullopt when the text is not a number in Prometheus' float format.
std::optional<double> parseSampleValue(std::string_view text);

}  // namespace lockstep::prometheus
