#include "operator/prometheus/query_result.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

namespace lockstep::prometheus {
namespace {

using nlohmann::json;

constexpr size_t kSnippetBytes = 200;

// The start of a body for a message: printable ASCII only, bounded.
std::string snippet(std::string_view body) {
  std::string out;
  size_t n = std::min(body.size(), kSnippetBytes);
  out.reserve(n + 3);
  for (size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(body[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c >= 0x7f) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  if (body.size() > n) out += "...";
  if (out.empty()) out = "(empty body)";
  return out;
}

std::string inQuotes(std::string_view s) { return "\"" + snippet(s) + "\""; }

// A body that is not a Prometheus API answer, described but never quoted: the
// address is the release author's, and its answer goes into the release's
// status and the operator's log, so quoting it would let a tenant read any
// address the operator can reach (server-side request forgery).
std::string unquotedBody(std::string_view body) {
  return body.empty() ? "(empty body)" : "(" + std::to_string(body.size()) + " bytes, not shown)";
}

QueryResult badResponse(std::string message) {
  return QueryResult::ofError(ErrorKind::kBadResponse, std::move(message));
}

// A [<unix time>, "<value>"] pair, as in a scalar result or a vector sample.
QueryResult decodeSamplePair(const json& pair, const std::string& where) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_string()) {
    return badResponse(where + " is not a [time, \"value\"] pair: " + snippet(pair.dump()));
  }
  const auto& text = pair[1].get_ref<const std::string&>();
  std::optional<double> v = parseSampleValue(text);
  if (!v) return badResponse(where + " value " + inQuotes(text) + " is not a number");
  if (std::isnan(*v)) {
    return QueryResult::ofError(
        ErrorKind::kNotFinite,
        "query returned NaN, which no threshold can judge (0/0: often no requests in the "
        "window); counted as an error");
  }
  if (std::isinf(*v)) {
    return QueryResult::ofError(ErrorKind::kNotFinite,
                                std::string("query returned ") + (*v > 0 ? "+Inf" : "-Inf") +
                                    " (a division by zero?), which no threshold can judge; "
                                    "counted as an error");
  }
  return QueryResult::ofValue(*v);
}

QueryResult decodeVector(const json& result) {
  if (!result.is_array()) return badResponse("data.result of a vector is not an array");
  if (result.empty()) {
    return QueryResult::ofError(ErrorKind::kEmpty,
                                "query returned an empty vector: no series matched (check the "
                                "metric name and label matchers, and that the target is scraped)");
  }
  if (result.size() > 1) {
    // The count only, never the series' labels: the message goes into the
    // release's status, and a tenant's query must not read other tenants' labels.
    return QueryResult::ofError(ErrorKind::kMultipleSeries,
                                "query returned " + std::to_string(result.size()) +
                                    " series; it must return exactly one value: aggregate it, "
                                    "e.g. sum(...) or max(...)");
  }
  const json& sample = result[0];
  if (!sample.is_object()) return badResponse("data.result[0] is not an object");
  if (sample.contains("histogram")) {
    return QueryResult::ofError(ErrorKind::kUnsupportedType,
                                "query returned a native histogram sample; it must return a "
                                "float (use histogram_quantile, histogram_count, ...)");
  }
  if (!sample.contains("value")) return badResponse("data.result[0] has no \"value\"");
  return decodeSamplePair(sample["value"], "data.result[0].value");
}

// The outcome for a body: `parsed` is the parsed body, or null when it is not JSON
// (errorAt: the byte where parsing stopped) or too large.
QueryResult classify(int httpStatus, std::string_view body, const json* parsed, size_t errorAt) {
  bool success2xx = httpStatus >= 200 && httpStatus < 300;
  if (body.size() > kMaxResponseBytes) {
    return QueryResult::ofError(success2xx ? ErrorKind::kBadResponse : ErrorKind::kHttp,
                                "HTTP " + std::to_string(httpStatus) + " response of " +
                                    std::to_string(body.size()) + " bytes exceeds the " +
                                    std::to_string(kMaxResponseBytes) + "-byte limit");
  }
  if (parsed == nullptr) {
    if (!success2xx) {
      return QueryResult::ofError(
          ErrorKind::kHttp,
          "HTTP " + std::to_string(httpStatus) + " without a Prometheus " +
              "API answer (is the address the Prometheus server?): " + unquotedBody(body));
    }
    return badResponse("response body is not JSON (at byte " + std::to_string(errorAt) +
                       "): " + unquotedBody(body));
  }
  const json& doc = *parsed;
  const json* status = doc.is_object() && doc.contains("status") ? &doc["status"] : nullptr;
  if (status != nullptr && status->is_string() && *status == "error") {
    std::string type = doc.contains("errorType") && doc["errorType"].is_string()
                           ? doc["errorType"].get<std::string>()
                           : std::string("unknown");
    std::string message = doc.contains("error") && doc["error"].is_string()
                              ? doc["error"].get<std::string>()
                              : std::string("(no message)");
    QueryResult e = QueryResult::ofError(
        ErrorKind::kQuery, "Prometheus refused the query (" + snippet(type) + ", HTTP " +
                               std::to_string(httpStatus) + "): " + snippet(message));
    e.errorType = type;
    return e;
  }
  if (!success2xx) {
    return QueryResult::ofError(ErrorKind::kHttp,
                                "HTTP " + std::to_string(httpStatus) +
                                    " without a Prometheus API error: " + unquotedBody(body));
  }
  if (!doc.is_object()) return badResponse("response is not a JSON object: " + unquotedBody(body));
  if (status == nullptr || !status->is_string()) {
    return badResponse("response has no \"status\" string: " + unquotedBody(body));
  }
  if (*status != "success") {
    return badResponse("response has status " + inQuotes(status->get<std::string>()) +
                       "; expected \"success\" or \"error\"");
  }
  if (!doc.contains("data") || !doc["data"].is_object()) {
    return badResponse("response has no \"data\" object");
  }
  const json& data = doc["data"];
  if (!data.contains("resultType") || !data["resultType"].is_string()) {
    return badResponse("data has no \"resultType\" string");
  }
  if (!data.contains("result")) return badResponse("data has no \"result\"");
  const auto& type = data["resultType"].get_ref<const std::string&>();
  const json& result = data["result"];
  if (type == "vector") return decodeVector(result);
  if (type == "scalar") return decodeSamplePair(result, "data.result (scalar)");
  if (type == "matrix") {
    return QueryResult::ofError(ErrorKind::kUnsupportedType,
                                "query returned a range vector (matrix); an analysis query "
                                "must return one value: apply a function such as "
                                "rate(...[5m]) to the range selector");
  }
  if (type == "string") {
    return QueryResult::ofError(ErrorKind::kUnsupportedType,
                                "query returned a string; it must return a number");
  }
  return badResponse("data.resultType " + inQuotes(type) +
                     " is not one of vector, scalar, matrix, string");
}

}  // namespace

const char* errorKindName(ErrorKind k) {
  switch (k) {
    case ErrorKind::kNone:
      return "none";
    case ErrorKind::kUnreachable:
      return "unreachable";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kHttp:
      return "http";
    case ErrorKind::kQuery:
      return "query";
    case ErrorKind::kBadResponse:
      return "bad-response";
    case ErrorKind::kEmpty:
      return "empty";
    case ErrorKind::kMultipleSeries:
      return "multiple-series";
    case ErrorKind::kUnsupportedType:
      return "unsupported-type";
    case ErrorKind::kNotFinite:
      return "not-finite";
    case ErrorKind::kConfig:
      return "config";
  }
  return "unknown";
}

QueryResult QueryResult::ofValue(double v) {
  QueryResult r;
  r.value = v;
  return r;
}

QueryResult QueryResult::ofError(ErrorKind kind, std::string message) {
  QueryResult r;
  r.kind = kind;
  r.error = std::move(message);
  return r;
}

std::optional<double> parseSampleValue(std::string_view text) {
  // Go's strconv.FormatFloat(v, 'f', -1, 64) as Prometheus writes it, and
  // ParseFloat's spellings of the special values.
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  if (text.empty()) return std::nullopt;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  bool plus = *begin == '+';
  if (plus) ++begin;  // from_chars takes no leading '+'
  if (begin == end || (plus && (*begin == '+' || *begin == '-'))) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(begin, end, v, std::chars_format::general);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  // from_chars also reads "nan"/"inf" spellings; only the forms above are Prometheus'.
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

QueryResult decodeQueryResponse(int httpStatus, std::string_view body) {
  json doc;
  bool parsed = false;
  size_t errorAt = 0;
  if (body.size() <= kMaxResponseBytes) {
    try {
      doc = json::parse(body);
      parsed = true;
    } catch (const json::parse_error& e) {
      errorAt = e.byte;
    } catch (const json::exception&) {
    }
  }
  QueryResult r = classify(httpStatus, body, parsed ? &doc : nullptr, errorAt);
  r.httpStatus = httpStatus;
  // Warnings ride along with whatever was decoded (they do not change the outcome).
  if (parsed && doc.is_object() && doc.contains("warnings") && doc["warnings"].is_array()) {
    for (const json& w : doc["warnings"]) {
      if (w.is_string()) r.warnings.push_back(snippet(w.get<std::string>()));
    }
  }
  return r;
}

}  // namespace lockstep::prometheus
