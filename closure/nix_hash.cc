#include "closure/nix_hash.h"

#include "common/base64.h"

namespace lockstep::closure {
namespace {

constexpr size_t kSha256Bytes = 32;

int nixBase32Value(char c) {
  const size_t i = kNixBase32Alphabet.find(c);
  return i == std::string_view::npos ? -1 : static_cast<int>(i);
}

std::string hexOf(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) {
    const auto u = static_cast<unsigned char>(b);
    out += kHex[u >> 4];
    out += kHex[u & 15];
  }
  return out;
}

std::optional<std::string> bytesOfHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]);
    const int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

size_t nixBase32Length(size_t bytes) { return bytes == 0 ? 0 : (bytes * 8 - 1) / 5 + 1; }

bool isStoreNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.' || c == '_' || c == '?' || c == '=';
}

}  // namespace

// Character k of n holds bits [5(n-1-k), 5(n-1-k)+5) of the hash, bit b being bit b%8 of
// byte b/8: the bit order of Nix's printHash32 (libutil/hash.cc), read backwards.
std::optional<std::string> nixBase32Decode(std::string_view text, size_t bytes) {
  if (text.size() != nixBase32Length(bytes)) return std::nullopt;
  std::string out(bytes, '\0');
  const size_t n = text.size();
  for (size_t k = 0; k < n; ++k) {
    const int digit = nixBase32Value(text[k]);
    if (digit < 0) return std::nullopt;
    const size_t bit = (n - 1 - k) * 5;
    const size_t i = bit / 8;
    const unsigned j = bit % 8;
    out[i] = static_cast<char>(static_cast<unsigned char>(out[i]) | ((digit << j) & 0xff));
    const unsigned carry = static_cast<unsigned>(digit) >> (8 - j);
    if (i + 1 < bytes) {
      out[i + 1] = static_cast<char>(static_cast<unsigned char>(out[i + 1]) | carry);
    } else if (carry != 0) {
      return std::nullopt;  // bits past the end of the hash
    }
  }
  return out;
}

std::string nixBase32Encode(std::string_view bytes) {
  const size_t n = nixBase32Length(bytes.size());
  std::string out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t bit = (n - 1 - k) * 5;
    const size_t i = bit / 8;
    const unsigned j = bit % 8;
    unsigned v = static_cast<unsigned char>(bytes[i]) >> j;
    if (i + 1 < bytes.size())
      v |= static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << (8 - j);
    out += kNixBase32Alphabet[v & 0x1f];
  }
  return out;
}

std::optional<std::string> narHashToDigest(std::string_view narHash) {
  std::optional<std::string> raw;
  if (narHash.rfind("sha256:", 0) == 0) {
    std::string_view v = narHash.substr(7);
    if (v.size() == 64) {
      raw = bytesOfHex(v);
    } else {
      raw = nixBase32Decode(v, kSha256Bytes);
    }
  } else if (narHash.rfind("sha256-", 0) == 0) {
    raw = base64Decode(narHash.substr(7));
  }
  if (!raw || raw->size() != kSha256Bytes) return std::nullopt;
  return "sha256:" + hexOf(*raw);
}

std::optional<std::string> digestToNixHash(std::string_view digest) {
  if (digest.rfind("sha256:", 0) != 0 || digest.size() != 71) return std::nullopt;
  auto raw = bytesOfHex(digest.substr(7));
  if (!raw) return std::nullopt;
  return "sha256:" + nixBase32Encode(*raw);
}

std::optional<StorePathParts> splitStorePath(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0 || path.front() != '/') return std::nullopt;
  const std::string_view base = path.substr(slash + 1);
  constexpr size_t kHashChars = 32;
  if (base.size() < kHashChars + 2 || base[kHashChars] != '-') return std::nullopt;
  const std::string_view hash = base.substr(0, kHashChars);
  const std::string_view name = base.substr(kHashChars + 1);
  for (char c : hash) {
    if (nixBase32Value(c) < 0) return std::nullopt;
  }
  if (name.size() > 211 || name.front() == '.') return std::nullopt;
  for (char c : name) {
    if (!isStoreNameChar(c)) return std::nullopt;
  }
  return StorePathParts{std::string(path.substr(0, slash)), std::string(hash), std::string(name)};
}

}  // namespace lockstep::closure
