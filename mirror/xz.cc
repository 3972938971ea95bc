#include "mirror/xz.h"

#include <lzma.h>

#include <array>

namespace lockstep::mirror {

StatusOr<std::string> xzDecompress(std::string_view compressed, size_t maxBytes) {
  constexpr uint64_t kMemLimit = uint64_t{256} << 20;  // xz -9 needs 65 MiB
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, kMemLimit, LZMA_CONCATENATED) != LZMA_OK) {
    return internalError("xz: the decoder could not be set up");
  }
  strm.next_in = reinterpret_cast<const uint8_t*>(compressed.data());
  strm.avail_in = compressed.size();
  std::string out;
  std::array<uint8_t, size_t{1} << 16> buf{};
  Status status = Status::ok();
  for (;;) {
    strm.next_out = buf.data();
    strm.avail_out = buf.size();
    const lzma_ret r = lzma_code(&strm, LZMA_FINISH);
    const size_t n = buf.size() - strm.avail_out;
    if (out.size() + n > maxBytes) {
      status =
          resourceExhausted("xz: more than " + std::to_string(maxBytes) + " bytes decompressed");
      break;
    }
    out.append(reinterpret_cast<const char*>(buf.data()), n);
    if (r == LZMA_STREAM_END) break;
    if (r == LZMA_OK) continue;
    if (r == LZMA_MEMLIMIT_ERROR) {
      status = resourceExhausted("xz: the stream needs more than 256 MiB to decode");
    } else if (r == LZMA_BUF_ERROR) {
      status = invalidArgument("xz: the data ends before the stream does");
    } else {
      status = invalidArgument("xz: not xz data or corrupt (liblzma error " +
                               std::to_string(static_cast<int>(r)) + ")");
    }
    break;
  }
  lzma_end(&strm);
  if (!status.isOk()) return status;
  return out;
}

}  // namespace lockstep::mirror
