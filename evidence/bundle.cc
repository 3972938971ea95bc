#include "evidence/bundle.h"

#include <array>

#include "evidence/statement.h"

namespace lockstep::evidence {
namespace {

// The media types a v0.3 reader accepts (the proto's comment on media_type).
constexpr std::array<std::string_view, 3> kAccepted = {
    kBundleMediaType,
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
};

}  // namespace

StatusOr<nlohmann::ordered_json> signStatement(std::string_view statement, const Signer& signer) {
  auto sig = signer.sign(pae(kInTotoPayloadType, statement));
  if (!sig.isOk()) return sig.status();
  const std::string hint = signer.publicKey().hint();
  // No keyid in the signature, as cosign writes it: DSSE verifiers (cosign's,
  // go-securesystemslib) skip a signature whose keyid is neither empty nor their
  // own fingerprint of the key. The bundle's hint names the key.
  Envelope e{kInTotoPayloadType, std::string(statement), {{"", *sig}}};
  return nlohmann::ordered_json{
      {"mediaType", kBundleMediaType},
      {"verificationMaterial", {{"publicKey", {{"hint", hint}}}}},
      {"dsseEnvelope", envelopeJson(e)},
  };
}

StatusOr<Bundle> parseBundle(std::string_view text, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalidArgument(origin + ": not a JSON object");
  Bundle b;
  if (!j.contains("mediaType") || !j.at("mediaType").is_string()) {
    return invalidArgument(origin + ": mediaType: missing");
  }
  b.mediaType = j.at("mediaType").get<std::string>();
  bool known = false;
  for (std::string_view m : kAccepted) known = known || b.mediaType == m;
  if (!known) {
    return invalidArgument(origin + ": mediaType: \"" + b.mediaType +
                           "\" is not a Sigstore bundle " + "v0.2 or v0.3");
  }
  if (!j.contains("dsseEnvelope")) {
    return invalidArgument(origin +
                           ": dsseEnvelope: missing (a message signature is no statement)");
  }
  const nlohmann::json& vm = j.value("verificationMaterial", nlohmann::json::object());
  if (vm.contains("publicKey")) {
    const nlohmann::json& pk = vm.at("publicKey");
    if (pk.is_object() && pk.contains("hint")) {
      if (!pk.at("hint").is_string()) {
        return invalidArgument(origin + ": verificationMaterial.publicKey.hint: not a string");
      }
      b.keyHint = pk.at("hint").get<std::string>();
    }
  } else if (vm.contains("certificate") || vm.contains("x509CertificateChain")) {
    return invalidArgument(origin +
                           ": verificationMaterial: a certificate (keyless signing) is not "
                           "supported yet; sign with a key");
  } else {
    return invalidArgument(origin + ": verificationMaterial.publicKey: missing");
  }
  auto e = parseEnvelope(j.at("dsseEnvelope"), origin + ": dsseEnvelope");
  if (!e.isOk()) return e.status();
  b.envelope = std::move(*e);
  if (b.envelope.signatures.size() != 1) {
    return invalidArgument(
        origin + ": dsseEnvelope.signatures: " + std::to_string(b.envelope.signatures.size()) +
        " signatures; a bundle's envelope has exactly one");
  }
  const std::string& keyid = b.envelope.signatures[0].keyid;
  if (!b.keyHint.empty() && !keyid.empty() && keyid != b.keyHint) {
    return invalidArgument(origin + ": dsseEnvelope.signatures[0].keyid \"" + keyid +
                           "\" differs from verificationMaterial.publicKey.hint \"" + b.keyHint +
                           "\"");
  }
  return b;
}

}  // namespace lockstep::evidence
