// xz (the .xz container, LZMA2), decompressed with Debian's liblzma: the one adapter of
// that library. A Nix binary cache stores NARs as .nar.xz by default (`nix copy --to`, the
// public NixOS cache), so `mirror push --nix-cache` reads xz; liblzma is the reference xz
// implementation (xz-utils), already on every Debian system. Exceptions: none (a C library).
// Thread-safety: a free function over values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::mirror {

// The decompressed bytes of one or more concatenated .xz streams. InvalidArgument for
// bytes that are not xz or are cut short; ResourceExhausted when the result would exceed
// `maxBytes` or the decoder would need more than 256 MiB of memory.
StatusOr<std::string> xzDecompress(std::string_view compressed, size_t maxBytes);

}  // namespace lockstep::mirror
