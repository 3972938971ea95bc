// The seams between the evidence formats and a signature library: a Signer
// holds a private key, a PublicKey checks signatures. The one implementation is
// evidence/ecdsa_p256 (OpenSSL, ECDSA P-256 with SHA-256, ASN.1 DER signatures,
// as cosign's keys); tests may bring fakes.
// Thread-safety: implementations are immutable after construction and safe to
// share between threads.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::evidence {

class PublicKey {
 public:
  virtual ~PublicKey() = default;
  // The key's hint in a Sigstore bundle and a DSSE keyid: base64(sha256(DER
  // SubjectPublicKeyInfo)). Unauthenticated: it only picks which key to try.
  virtual std::string hint() const = 0;
  // The key as PEM ("-----BEGIN PUBLIC KEY-----").
  virtual std::string pem() const = 0;
  // True when `signature` is this key's signature of `message`.
  virtual bool verify(std::string_view message, std::string_view signature) const = 0;
};

class Signer {
 public:
  virtual ~Signer() = default;
  virtual const PublicKey& publicKey() const = 0;
  // The signature of `message` (hashed by the implementation).
  virtual StatusOr<std::string> sign(std::string_view message) const = 0;
};

}  // namespace lockstep::evidence
