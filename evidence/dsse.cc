#include "evidence/dsse.h"

#include "common/base64.h"

namespace lockstep::evidence {

std::string pae(std::string_view payloadType, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payloadType.size());
  out += ' ';
  out += payloadType;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

nlohmann::ordered_json envelopeJson(const Envelope& e) {
  nlohmann::ordered_json sigs = nlohmann::ordered_json::array();
  for (const Envelope::Signature& s : e.signatures) {
    nlohmann::ordered_json j;
    if (!s.keyid.empty()) j["keyid"] = s.keyid;
    j["sig"] = base64Encode(s.sig);
    sigs.push_back(j);
  }
  return nlohmann::ordered_json{
      {"payload", base64Encode(e.payload)}, {"payloadType", e.payloadType}, {"signatures", sigs}};
}

StatusOr<Envelope> parseEnvelope(const nlohmann::json& j, const std::string& where) {
  auto str = [&](const nlohmann::json& o, const char* key,
                 const std::string& at) -> StatusOr<std::string> {
    if (!o.is_object() || !o.contains(key) || !o.at(key).is_string()) {
      return invalidArgument(at + "." + key + ": missing or not a string");
    }
    return o.at(key).get<std::string>();
  };
  auto bytes = [&](const nlohmann::json& o, const char* key,
                   const std::string& at) -> StatusOr<std::string> {
    auto text = str(o, key, at);
    if (!text.isOk()) return text.status();
    auto decoded = base64Decode(*text, Base64Alphabet::kStandardOrUrlSafe);
    if (!decoded) return invalidArgument(at + "." + key + ": not base64");
    return *decoded;
  };
  Envelope e;
  auto type = str(j, "payloadType", where);
  if (!type.isOk()) return type.status();
  e.payloadType = *type;
  auto payload = bytes(j, "payload", where);
  if (!payload.isOk()) return payload.status();
  e.payload = *payload;
  if (!j.contains("signatures") || !j.at("signatures").is_array()) {
    return invalidArgument(where + ".signatures: missing or not a list");
  }
  const nlohmann::json& sigs = j.at("signatures");
  for (size_t i = 0; i < sigs.size(); ++i) {
    const std::string at = where + ".signatures[" + std::to_string(i) + "]";
    Envelope::Signature s;
    if (sigs[i].is_object() && sigs[i].contains("keyid")) {
      if (!sigs[i].at("keyid").is_string()) return invalidArgument(at + ".keyid: not a string");
      s.keyid = sigs[i].at("keyid").get<std::string>();
    }
    auto sig = bytes(sigs[i], "sig", at);
    if (!sig.isOk()) return sig.status();
    s.sig = *sig;
    e.signatures.push_back(std::move(s));
  }
  return e;
}

}  // namespace lockstep::evidence
