// The Sigstore bundle v0.3 (sigstore/protobuf-specs, protos/sigstore_bundle.proto,
// in its JSON encoding) that cosign v3 writes for a DSSE attestation signed with
// a key: {"mediaType", "verificationMaterial": {"publicKey": {"hint"}},
// "dsseEnvelope"}. No transparency-log entry and no timestamp: Lockstep's
// evidence is verified offline against trusted keys (docs/evidence.md).
// Pure but for the Signer it is given. Thread-safety: free functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "common/status.h"
#include "evidence/dsse.h"
#include "evidence/signer.h"

namespace lockstep::evidence {

inline constexpr char kBundleMediaType[] = "application/vnd.dev.sigstore.bundle.v0.3+json";

// Signs `statement` (an in-toto statement's bytes, the DSSE payload) as a DSSE
// envelope of type application/vnd.in-toto+json, in a bundle whose key hint is
// the signer's. The signature carries no keyid, as cosign writes it (its DSSE
// verifier skips a signature whose keyid is another fingerprint than its own).
StatusOr<nlohmann::ordered_json> signStatement(std::string_view statement, const Signer& signer);

struct Bundle {
  std::string mediaType;
  std::string keyHint;  // verificationMaterial.publicKey.hint; "" when absent
  Envelope envelope;
};

// Reads a bundle with a DSSE envelope. kInvalidArgument naming `origin` and the
// field for JSON that is not one: another media type, a message signature, a
// certificate instead of a public key (keyless: not yet), an envelope without
// exactly one signature, a key hint that differs from the signature's keyid.
StatusOr<Bundle> parseBundle(std::string_view text, const std::string& origin);

}  // namespace lockstep::evidence
