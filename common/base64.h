// Base64 (RFC 4648): the standard alphabet with padding for encoding; decoding
// takes the standard alphabet, or either alphabet where a format allows both
// (DSSE envelopes: "verifiers MUST accept either").
// Pure. Thread-safety: free functions over values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lockstep {

enum class Base64Alphabet {
  kStandard,           // A-Z a-z 0-9 + /
  kStandardOrUrlSafe,  // also - _ (RFC 4648 section 5)
};

// Standard alphabet, '=' padding.
std::string base64Encode(std::string_view bytes);
// nullopt on a character outside the alphabet, data after padding, or a length that is
// not a whole number of bytes. Padding is optional.
std::optional<std::string> base64Decode(std::string_view text,
                                        Base64Alphabet alphabet = Base64Alphabet::kStandard);

}  // namespace lockstep
