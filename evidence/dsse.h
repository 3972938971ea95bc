// DSSE (https://github.com/secure-systems-lab/dsse, protocol and envelope
// v1.0.2): the pre-authentication encoding that is signed, and the JSON
// envelope. Signatures are made and checked by a Signer / PublicKey
// (evidence/signer.h); this file only encodes.
// Pure. Thread-safety: free functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lockstep::evidence {

// PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, LEN the
// byte length in ASCII decimal without leading zeros.
std::string pae(std::string_view payloadType, std::string_view payload);

struct Envelope {
  struct Signature {
    std::string keyid;  // unauthenticated hint; "" when unset
    std::string sig;    // raw signature bytes
  };
  std::string payloadType;
  std::string payload;  // raw bytes
  std::vector<Signature> signatures;
};

// {"payload": b64, "payloadType": …, "signatures": [{"keyid"?: …, "sig": b64}]}
// (standard base64; keyid left out when empty).
nlohmann::ordered_json envelopeJson(const Envelope& e);
// Reads an envelope; base64 in either alphabet (the spec: verifiers MUST accept
// both). kInvalidArgument naming the field (under `where`) otherwise.
StatusOr<Envelope> parseEnvelope(const nlohmann::json& j, const std::string& where);

}  // namespace lockstep::evidence
