#include "cmd/lockstep/file_include_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

namespace lockstep::cli {
namespace {

// Reads up to maxBytes + 1 bytes: one more than allowed tells "too large" apart
// from "exactly at the limit" without reading the rest.
StatusOr<std::string> readBounded(std::istream& in, const std::string& path, size_t maxBytes) {
  std::string out;
  char buf[64 * 1024];
  while (in) {
    const size_t want = std::min(sizeof buf, maxBytes + 1 - out.size());
    in.read(buf, static_cast<std::streamsize>(want));
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > maxBytes) {
      return resourceExhausted(path + ": larger than " + std::to_string(maxBytes) +
                               " bytes (the limit of a lock file, docs/limits.md)");
    }
  }
  if (in.bad()) return invalidArgument(path + ": read error");
  return out;
}

}  // namespace

StatusOr<std::string> readFile(const std::string& path, size_t maxBytes) {
  if (path == "-") return readBounded(std::cin, "stdin", maxBytes);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return notFound(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return invalidArgument(path + ": not a regular file");
  if (static_cast<unsigned long long>(st.st_size) > maxBytes) {
    return resourceExhausted(path + ": " + std::to_string(st.st_size) + " bytes; the limit is " +
                             std::to_string(maxBytes) + " (docs/limits.md)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": " + std::strerror(errno));
  return readBounded(in, path, maxBytes);
}

StatusOr<std::string> FileIncludeReader::read(const std::string& name, size_t maxBytes) const {
  return readFile(directory_.empty() ? name : directory_ + "/" + name, maxBytes);
}

}  // namespace lockstep::cli
