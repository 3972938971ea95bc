// Nix's spellings of a sha256 (a NAR hash, docs/supply-chain.md "Nix store paths"): Nix's
// base-32 ("sha256:1m5k…", 52 characters), SRI ("sha256-HDfQ…=", base64) and base-16, and
// the parts of a store path. Nix's base-32 is not RFC 4648: its alphabet omits e, o, u and
// t, and it writes the hash's bits from the last 5-bit group to the first, so the first
// character holds the top bits of the last byte. Pure. Thread-safety: free functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lockstep::closure {

// "0123456789abcdfghijklmnpqrsvwxyz"
inline constexpr std::string_view kNixBase32Alphabet = "0123456789abcdfghijklmnpqrsvwxyz";

// The bytes of a Nix base-32 string of a `bytes`-long hash; nullopt for a wrong length, a
// character outside the alphabet or bits beyond the hash (52 characters hold 260 bits).
std::optional<std::string> nixBase32Decode(std::string_view text, size_t bytes = 32);
// Nix's base-32 of `bytes` (52 characters for a sha256).
std::string nixBase32Encode(std::string_view bytes);

// A NAR hash as a lock spells it -> "sha256:<64 lowercase hex>" (an OCI digest):
// "sha256:<nix base-32>", "sha256:<hex>", "sha256-<base64>" (SRI). nullopt otherwise.
std::optional<std::string> narHashToDigest(std::string_view narHash);
// "sha256:<64 hex>" -> "sha256:<nix base-32>", as a narinfo writes NarHash and FileHash;
// nullopt for anything else.
std::optional<std::string> digestToNixHash(std::string_view digest);

// "/nix/store/<32 base-32>-<name>": the store directory, the hash part and the name;
// nullopt when `path` is not one (the name: [A-Za-z0-9+-._?=], not starting with '.').
struct StorePathParts {
  std::string storeDir;  // "/nix/store"
  std::string hashPart;  // "wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1"
  std::string name;      // "hello-2.12.1"
};
std::optional<StorePathParts> splitStorePath(std::string_view path);

}  // namespace lockstep::closure
