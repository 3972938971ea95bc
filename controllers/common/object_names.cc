#include "controllers/common/object_names.h"

#include <openssl/sha.h>

#include <cstdio>

namespace lockstep::controllers {

std::string dnsLabelName(const std::string& full) {
  if (full.size() <= 63) return full;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(full.data()), full.size(), digest);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", digest[0], digest[1], digest[2], digest[3]);
  std::string prefix = full.substr(0, 63 - 9);
  while (!prefix.empty() && (prefix.back() == '-' || prefix.back() == '.')) prefix.pop_back();
  return prefix + "-" + hex;
}

}  // namespace lockstep::controllers
