// ECDSA P-256 with SHA-256 over OpenSSL's EVP API: the one file of the evidence
// library that touches OpenSSL's key and signature functions. Keys are PEM:
// a private key as PKCS#8 ("PRIVATE KEY") or SEC1 ("EC PRIVATE KEY"), not
// encrypted (the operator reads it from a Secret); a public key as
// SubjectPublicKeyInfo ("PUBLIC KEY"), what `openssl ec -pubout` and
// `cosign generate-key-pair` write. Signatures are ASN.1 DER.
// Thread-safety: the objects are immutable after construction; sign() and
// verify() may run concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "evidence/signer.h"

namespace lockstep::evidence {

// kInvalidArgument naming `origin` for text that is not a P-256 public key.
StatusOr<std::shared_ptr<const PublicKey>> parseP256PublicKey(std::string_view pem,
                                                              const std::string& origin);
// kInvalidArgument naming `origin` for text that is not an unencrypted P-256 private key.
StatusOr<std::unique_ptr<Signer>> parseP256PrivateKey(std::string_view pem,
                                                      const std::string& origin);

}  // namespace lockstep::evidence
