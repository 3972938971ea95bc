#include "evidence/stage_evidence.h"

#include <optional>
#include <set>

#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/statement.h"
#include "evidence/verify.h"

namespace lockstep::evidence {
namespace {

using nlohmann::json;

std::string stringAt(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>()
                                                                   : "";
}

std::string quoteStageEvidence(const std::string& s) { return "\"" + s + "\""; }

// The digest part of "REPOSITORY@sha256:…"; the text itself when it has no '@'.
std::string imageDigest(const std::string& image) {
  const size_t at = image.rfind('@');
  return at == std::string::npos ? image : image.substr(at + 1);
}

// What a bundle claims before it is verified (stage, predicate): for messages
// only, never for a decision.
struct Claim {
  std::string stage, predicateType;
};
Claim peek(const ReferrerBundle& r) {
  Claim c;
  auto b = parseBundle(r.bundle, "referrer");
  if (b.isOk()) {
    json s = json::parse(b->envelope.payload, nullptr, false);
    if (s.is_object()) {
      c.predicateType = stringAt(s, "predicateType");
      c.stage =
          stringAt(s.value("predicate", json::object()).value("lockstep", json::object()), "stage");
    }
  }
  if (c.stage.empty()) c.stage = r.statementName.substr(0, r.statementName.find('/'));
  return c;
}

// The most telling refusal seen for a stage: a trusted statement that does not
// fit (mismatch) says more than an untrusted one, which says more than none.
struct Held {
  int rank = 0;  // 0 missing, 1 untrusted, 2 mismatch
  std::string reason = kReasonEvidenceMissing;
  std::string detail;
  void note(int r, const char* why, const std::string& text) {
    if (r <= rank && !detail.empty()) return;
    rank = r;
    reason = why;
    detail = text;
  }
};

struct Verified {
  const ReferrerBundle* referrer;
  VerifiedStatement statement;
};

}  // namespace

json StageEvidenceResult::toJson() const {
  json out{{"passed", passed}, {"message", message}};
  if (!reason.empty()) out["reason"] = reason;
  json list = json::array();
  for (const FoundStatement& f : statements) {
    list.push_back({{"stage", f.stage},
                    {"predicateType", f.predicateType},
                    {"payloadDigest", f.payloadDigest},
                    {"referrer", f.referrer},
                    {"signedBy", f.signedBy},
                    {"specDigest", f.specDigest}});
  }
  out["statements"] = list;
  return out;
}

StatusOr<std::vector<TrustedKey>> trustedKeys(const api::v1alpha1::TrustPolicySpec& policy,
                                              const std::string& packageName,
                                              const std::string& stage,
                                              const std::string& policyName) {
  const std::set<std::string> names = api::v1alpha1::trustedKeyNames(policy, packageName, stage);
  std::vector<TrustedKey> out;
  for (size_t i = 0; i < policy.keys.size(); ++i) {
    const api::v1alpha1::TrustPolicyKey& k = policy.keys[i];
    // Every key is parsed: a broken one makes the whole policy invalid.
    auto parsed = parseP256PublicKey(k.publicKey, "TrustPolicy " + quoteStageEvidence(policyName) +
                                                      " spec.keys[" + std::to_string(i) + "] " +
                                                      quoteStageEvidence(k.name));
    if (!parsed.isOk()) return parsed.status();
    if (names.count(k.name)) out.push_back(TrustedKey{k.name, *parsed});
  }
  return out;
}

StageEvidenceResult checkStageEvidence(const std::vector<ReferrerBundle>& referrers,
                                       const api::v1alpha1::TrustPolicySpec& policy,
                                       const EvidenceRequirement& want) {
  StageEvidenceResult out;
  const std::string policyName = "TrustPolicy " + quoteStageEvidence(want.policyName);
  auto hold = [&](const std::string& reason, const std::string& message) {
    out.passed = false;
    out.reason = reason;
    out.message = message;
    out.statements.clear();
    return out;
  };
  if (want.stages.empty()) return hold(kReasonEvidenceInvalid, "no stage is asked for");

  for (const std::string& stage : want.stages) {
    auto keys = trustedKeys(policy, want.packageName, stage, want.policyName);
    if (!keys.isOk()) return hold(kReasonEvidenceInvalid, keys.status().message());
    const std::vector<TrustedKey>& trusted = *keys;
    if (trusted.empty()) {
      return hold(kReasonEvidenceUntrusted, policyName + " trusts no key for stage " +
                                                quoteStageEvidence(stage) + " of " +
                                                want.packageName);
    }
    const std::string where = "stage " + quoteStageEvidence(stage) + ": ";
    // Every referrer that verifies under a key trusted for this stage, by payload digest.
    std::map<std::string, Verified> byPayload;
    Held held;
    std::optional<Verified> decision;
    for (const ReferrerBundle& r : referrers) {
      const std::string origin = "referrer " + r.manifestDigest;
      if (!r.error.empty()) {
        held.note(0, kReasonEvidenceMissing, origin + " could not be read: " + r.error);
        continue;
      }
      Expectation any;
      any.subjectDigest = want.packageDigest;
      any.stage = stage;
      Refusal why = Refusal::kNone;
      auto v = verifyBundle(r.bundle, trusted, any, origin, &why);
      const Claim claim = peek(r);
      const bool decisionClaim =
          claim.stage == stage && claim.predicateType == kVerificationSummaryPredicate;
      if (!v.isOk()) {
        if (!decisionClaim) continue;
        if (why == Refusal::kUntrustedKey || why == Refusal::kBadSignature) {
          held.note(1, kReasonEvidenceUntrusted, v.status().message());
        } else if (why == Refusal::kOtherSubject || why == Refusal::kNotPassed) {
          held.note(2, kReasonEvidenceMismatch, v.status().message());
        } else if (why == Refusal::kMalformed) {
          held.note(0, kReasonEvidenceMissing, v.status().message());
        }
        continue;
      }
      const std::string payloadDigest = sha256Digest(v->payload);
      byPayload.emplace(payloadDigest, Verified{&r, *v});
      if (v->predicateType != kVerificationSummaryPredicate || decision) continue;
      // A decision under a trusted key: it must be for this spec and this runtime.
      const json& predicate = v->statement.value("predicate", json::object());
      const json own = predicate.value("lockstep", json::object());
      std::string mismatch;
      if (!v->passed) {
        mismatch = "its verificationResult is " +
                   quoteStageEvidence(stringAt(predicate, "verificationResult"));
      } else if (auto spec = want.specDigests.find(stage);
                 spec != want.specDigests.end() && v->stageSpecDigest != spec->second) {
        mismatch = "it is for stage spec " + v->stageSpecDigest + ", not " + spec->second;
      } else if (!want.closureHash.empty() && stringAt(own, "closureHash") != want.closureHash) {
        mismatch = "it was made on closure " + quoteStageEvidence(stringAt(own, "closureHash")) +
                   ", not the pinned " + want.closureHash;
      } else if (!want.runtimeImageDigest.empty() &&
                 imageDigest(stringAt(own, "runtimeImage")) != want.runtimeImageDigest) {
        mismatch = "it was made on runtime image " +
                   quoteStageEvidence(stringAt(own, "runtimeImage")) + ", not one with digest " +
                   want.runtimeImageDigest;
      }
      if (!mismatch.empty()) {
        held.note(2, kReasonEvidenceMismatch,
                  origin + " (signed by " + v->keyName + "): " + mismatch);
        continue;
      }
      decision = Verified{&r, *v};
    }
    if (!decision) {
      return hold(held.reason, where + "no decision signed by a key " + policyName +
                                   " trusts for " + want.packageName + "@" + want.packageDigest +
                                   " among " + std::to_string(referrers.size()) + " referrer" +
                                   (referrers.size() == 1 ? "" : "s") +
                                   (held.detail.empty() ? "" : " (" + held.detail + ")"));
    }
    // The statements the decision cites, each verified and byte-identical.
    const json& predicate = decision->statement.statement.value("predicate", json::object());
    std::vector<FoundStatement> found;
    for (const json& input : predicate.value("inputAttestations", json::array())) {
      const std::string digest =
          "sha256:" + stringAt(input.value("digest", json::object()), "sha256");
      auto it = byPayload.find(digest);
      if (it == byPayload.end()) {
        return hold(kReasonEvidenceMissing,
                    where + "the decision in referrer " + decision->referrer->manifestDigest +
                        " cites " + quoteStageEvidence(stringAt(input, "name")) + " (" + digest +
                        "), which no referrer signed by a trusted key holds");
      }
      found.push_back({stage, it->second.statement.predicateType, digest,
                       it->second.referrer->manifestDigest, it->second.statement.keyName,
                       it->second.statement.stageSpecDigest});
    }
    out.statements.push_back({stage, kVerificationSummaryPredicate,
                              sha256Digest(decision->statement.payload),
                              decision->referrer->manifestDigest, decision->statement.keyName,
                              decision->statement.stageSpecDigest});
    out.statements.insert(out.statements.end(), found.begin(), found.end());
  }
  out.passed = true;
  std::set<std::string> signers;
  for (const FoundStatement& f : out.statements) signers.insert(f.signedBy);
  std::string by;
  for (const std::string& s : signers) by += (by.empty() ? "" : ", ") + s;
  std::string stages;
  for (const std::string& s : want.stages) stages += (stages.empty() ? "" : ", ") + s;
  out.message = "verified " + std::to_string(out.statements.size()) + " statement" +
                (out.statements.size() == 1 ? "" : "s") + " for stage" +
                (want.stages.size() == 1 ? " " : "s ") + stages + ", signed by " + by;
  return out;
}

}  // namespace lockstep::evidence
