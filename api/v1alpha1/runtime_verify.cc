#include "api/v1alpha1/runtime_verify.h"

#include "api/v1alpha1/meta.h"
#include "operator/kube/conditions.h"

namespace lockstep::api::v1alpha1 {

using nlohmann::json;

std::optional<VerifySpec> decodeVerifySpec(const json& runtimeEnv) {
  const json& spec = decode::object(runtimeEnv, "spec");
  if (decode::member(spec, "verify") == nullptr) return std::nullopt;
  const json& v = decode::object(spec, "verify");
  VerifySpec out;
  out.schedule = decode::string(v, "schedule");
  out.smoke = decode::string(v, "smoke");
  out.requiredForPromotion = decode::boolean(v, "requiredForPromotion", false);
  out.onStart = decode::boolean(v, "onStart", false);
  if (std::string p = decode::string(v, "prefix"); !p.empty()) out.prefix = p;
  out.timeoutSeconds = decode::integer(v, "timeoutSeconds", kDefaultVerifyTimeoutSeconds);
  if (out.timeoutSeconds <= 0) out.timeoutSeconds = kDefaultVerifyTimeoutSeconds;
  const json& pod = decode::object(v, "pod");
  for (const auto& [k, val] : decode::object(pod, "annotations").items()) {
    if (val.is_string()) out.podAnnotations[k] = val.get<std::string>();
  }
  out.tolerations = decode::array(pod, "tolerations");
  return out;
}

StatusOr<std::optional<OnStartVerification>> decodeOnStart(const json& runtimeEnv) {
  const std::string who = "RuntimeEnv \"" + decodeMeta(runtimeEnv).name + "\" ";
  auto wrong = [&](const std::string& field, const char* want, const json& found) {
    return Status(Code::kInvalidArgument, who + field + ": expected " + want + ", found " +
                                              std::string(found.type_name()) + " " + found.dump());
  };
  const json* verify = decode::member(decode::object(runtimeEnv, "spec"), "verify");
  if (verify == nullptr || verify->is_null()) return std::optional<OnStartVerification>();
  if (!verify->is_object()) return wrong("spec.verify", "an object", *verify);
  const json* onStart = decode::member(*verify, "onStart");
  if (onStart == nullptr || onStart->is_null()) return std::optional<OnStartVerification>();
  if (!onStart->is_boolean()) return wrong("spec.verify.onStart", "a boolean", *onStart);
  if (!onStart->get<bool>()) return std::optional<OnStartVerification>();
  OnStartVerification out;
  if (const json* prefix = decode::member(*verify, "prefix"); prefix != nullptr) {
    if (!prefix->is_string() || prefix->get<std::string>().empty() ||
        prefix->get<std::string>()[0] != '/')
      return wrong("spec.verify.prefix", "an absolute path", *prefix);
    out.prefix = prefix->get<std::string>();
  }
  return std::optional<OnStartVerification>(out);
}

VerificationStatus decodeVerificationStatus(const json& runtimeEnv) {
  const json& v = decode::object(decode::object(runtimeEnv, "status"), "verification");
  VerificationStatus out;
  out.run = decode::integer(v, "run", 0);
  out.revision = decode::integer(v, "revision", 0);
  out.closureHash = decode::string(v, "closureHash");
  out.startedAt = decode::string(v, "startedAt");
  out.finishedAt = decode::string(v, "finishedAt");
  out.result = decode::string(v, "result");
  out.nextRunAt = decode::string(v, "nextRunAt");
  out.staleAfter = decode::string(v, "staleAfter");
  const json& verdict = decode::object(v, "verdict");
  out.verdict.run = decode::integer(verdict, "run", 0);
  out.verdict.result = decode::string(verdict, "result");
  out.verdict.startedAt = decode::string(verdict, "startedAt");
  out.verdict.finishedAt = decode::string(verdict, "finishedAt");
  out.verdict.message = decode::string(verdict, "message");
  for (const json& r : decode::array(v, "results")) {
    out.results.push_back({decode::string(r, "gpuProduct"), decode::string(r, "node"),
                           decode::string(r, "driver"), decode::string(r, "job"),
                           decode::string(r, "result"), decode::string(r, "message"),
                           decode::string(r, "finishedAt")});
  }
  return out;
}

json encodeVerificationStatus(const VerificationStatus& v) {
  json results = json::array();
  for (const VerificationResult& r : v.results) {
    json o = {{"gpuProduct", r.gpuProduct}, {"result", r.result}, {"job", r.job}};
    if (!r.node.empty()) o["node"] = r.node;
    if (!r.driver.empty()) o["driver"] = r.driver;
    if (!r.message.empty()) o["message"] = r.message;
    if (!r.finishedAt.empty()) o["finishedAt"] = r.finishedAt;
    results.push_back(std::move(o));
  }
  json out = {{"run", v.run},
              {"revision", v.revision},
              {"closureHash", v.closureHash},
              {"startedAt", v.startedAt},
              {"result", v.result},
              {"results", std::move(results)}};
  if (!v.finishedAt.empty()) out["finishedAt"] = v.finishedAt;
  if (v.verdict.run > 0) {
    out["verdict"] = {{"run", v.verdict.run},
                      {"result", v.verdict.result},
                      {"startedAt", v.verdict.startedAt},
                      {"finishedAt", v.verdict.finishedAt},
                      {"message", v.verdict.message}};
  }
  if (!v.nextRunAt.empty()) out["nextRunAt"] = v.nextRunAt;
  if (!v.staleAfter.empty()) out["staleAfter"] = v.staleAfter;
  return out;
}

std::optional<std::string> verificationBlocksPromotion(const json& runtimeEnv,
                                                       const std::string& now) {
  std::optional<VerifySpec> spec = decodeVerifySpec(runtimeEnv);
  if (!spec || !spec->requiredForPromotion) return std::nullopt;
  const std::string name = "RuntimeEnv \"" + decodeMeta(runtimeEnv).name + "\"";
  const json& status = decode::object(runtimeEnv, "status");
  const int64_t current = decode::integer(status, "currentRevision", 0);
  const VerificationStatus v = decodeVerificationStatus(runtimeEnv);
  auto verified = kube::findCondition(decode::array(status, "conditions"), kConditionVerified);
  const std::string why = verified ? decode::string(*verified, "message") : "";
  if (spec->schedule.empty())
    return name + " requires verification for promotion but has no spec.verify.schedule";
  if (v.run == 0 || v.revision != current || v.verdict.run == 0) {
    std::string running = v.run > 0 && v.revision == current && v.result == kResultRunning
                              ? " (run " + std::to_string(v.run) + " is running)"
                              : "";
    return name + ": revision " + std::to_string(current) + " is not verified yet" + running +
           (why.empty() ? "" : "; " + why);
  }
  if (v.verdict.result != kResultPassed) {
    return name + ": verification of revision " + std::to_string(current) + " failed (run " +
           std::to_string(v.verdict.run) + "): " + v.verdict.message;
  }
  if (!v.staleAfter.empty() && now > v.staleAfter) {
    return name + ": the last passed verification (run " + std::to_string(v.verdict.run) +
           ", started " + v.verdict.startedAt + ") is older than its schedule \"" + spec->schedule +
           "\" allows (a newer run was due to finish by " + v.staleAfter + ")";
  }
  return std::nullopt;
}

}  // namespace lockstep::api::v1alpha1
