#include "evidence/purl.h"

namespace lockstep::evidence {

std::string percentEncode(std::string_view s, bool keepSlash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    const bool safe = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_' || c == '~' || (keepSlash && c == '/');
    if (safe) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string packageUrl(const closure::Package& p) {
  // The closure already normalizes names as these purl types want them: PEP 503 for
  // PyPI (lowercase, runs of -_. as '-'), lowercase for conda.
  std::string type = "generic";
  if (p.ecosystem == "pypi" || p.ecosystem == "conda" || p.ecosystem == "nix") type = p.ecosystem;
  std::string out = "pkg:" + type + "/" + percentEncode(p.name);
  if (!p.version.empty()) out += "@" + percentEncode(p.version);
  return out;
}

std::string ociPackageUrl(const api::ImageRef& ref) {
  const std::string repository = ref.repository();
  const size_t slash = repository.rfind('/');
  const std::string name = repository.substr(slash == std::string::npos ? 0 : slash + 1);
  std::string out = "pkg:oci/" + percentEncode(name);
  if (!ref.digest.empty()) out += "@" + percentEncode(ref.digest);
  out += "?repository_url=" + percentEncode(repository, /*keepSlash=*/true);
  if (!ref.tag.empty()) out += "&tag=" + percentEncode(ref.tag);
  return out;
}

}  // namespace lockstep::evidence
