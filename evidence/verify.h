// Verifying a signed statement offline: a Sigstore bundle (evidence/bundle.h)
// against the trusted public keys and what the caller expects of it. Each
// refusal says which check failed, as a message and as a typed Refusal:
//   - a key that is not trusted, or a signature that does not verify (the
//     payload or the signature altered after signing);
//   - a statement about another subject (another package digest);
//   - another predicate type or stage than asked for;
//   - a verdict for another stage spec digest (the thresholds or the gate changed:
//     it is no evidence for this release);
//   - a verdict that did not pass.
// The signature is checked before the payload is parsed, and the statement
// returned is parsed from exactly the bytes that were verified (DSSE protocol).
// Pure but for the PublicKeys it is given. Thread-safety: free functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "evidence/signer.h"

namespace lockstep::evidence {

struct TrustedKey {
  std::string name;  // shown in messages: "lockstep-prod", a file name
  std::shared_ptr<const PublicKey> key;
};

struct Expectation {
  std::string subjectDigest;    // required: the package digest, "sha256:…"
  std::string predicateType;    // "" any
  std::string stage;            // "" any
  std::string stageSpecDigest;  // "" any; else the spec the verdict must be for
  bool requirePassed = true;    // a FAILED result or verification is refused
};

enum class Refusal {
  kNone,
  kMalformed,       // not a bundle / envelope / statement
  kUntrustedKey,    // signed by a key that is not in the trusted list
  kBadSignature,    // the trusted key's signature does not verify: altered after signing
  kOtherSubject,    // the statement is about another digest
  kOtherPredicate,  // another predicate type than asked for
  kOtherStage,      // another stage than asked for
  kOtherSpec,       // a verdict for another stage spec digest
  kNotPassed,       // the statement records a failure
};

struct VerifiedStatement {
  std::string keyName;  // the trusted key that verified it
  std::string predicateType;
  std::string stage;            // predicate.lockstep.stage; "bom", "prod", "fleet": records
  std::string stageSpecDigest;  // "sha256:…": the configuration / policy digest
  bool passed = false;
  std::string payload;       // the verified bytes
  nlohmann::json statement;  // parsed from `payload`
};

// kInvalidArgument with a message naming `origin` and the failed check; `why`,
// when given, gets the Refusal (kNone on success).
StatusOr<VerifiedStatement> verifyBundle(std::string_view bundleText,
                                         const std::vector<TrustedKey>& keys,
                                         const Expectation& want, const std::string& origin,
                                         Refusal* why = nullptr);

}  // namespace lockstep::evidence
