#include "verify/fs_tree.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace lockstep::verify {

namespace fs = std::filesystem;

StatusOr<std::vector<DirEntry>> FsTree::list(const std::string& dir) const {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (ec || !fs::exists(st)) return notFound(dir + ": no such directory");
  if (!fs::is_directory(st)) return invalidArgument(dir + ": not a directory");
  std::vector<DirEntry> out;
  fs::directory_iterator it(dir, ec);
  if (ec) return invalidArgument(dir + ": " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return invalidArgument(dir + ": " + ec.message());
    std::error_code e2;
    // Follows symlinks: /sys/class/infiniband/<dev> and lib64 -> lib are links.
    const bool isDir = fs::is_directory(it->path(), e2);
    out.push_back({it->path().filename().string(), isDir});
  }
  if (ec) return invalidArgument(dir + ": " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

StatusOr<std::string> FsTree::read(const std::string& path, size_t maxBytes) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return notFound(path + ": " + std::strerror(errno));
  // /proc and /sys files report size 0 or 4096 whatever they hold: read them, bounded.
  if (!S_ISREG(st.st_mode)) return invalidArgument(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalidArgument(path + ": " + std::strerror(errno));
  std::string out;
  char buf[64 * 1024];
  while (in) {
    in.read(buf, static_cast<std::streamsize>(std::min(sizeof buf, maxBytes + 1 - out.size())));
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > maxBytes) {
      return resourceExhausted(path + ": larger than " + std::to_string(maxBytes) + " bytes");
    }
  }
  if (in.bad()) return invalidArgument(path + ": read error");
  return out;
}

bool FsTree::exists(const std::string& path) const {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<std::string> FsTree::find(const std::string& path, const std::string& needle,
                                        size_t after, size_t maxBytes) const {
  std::ifstream in(path, std::ios::binary);
  if (!in || needle.empty()) return std::nullopt;
  // Pieces overlap by needle + after bytes so a match across a boundary is not lost.
  const size_t keep = needle.size() + after;
  std::string window;
  char buf[1 << 20];
  size_t total = 0;
  while (in && total < maxBytes) {
    in.read(buf, sizeof buf);
    const auto n = static_cast<size_t>(in.gcount());
    total += n;
    window.append(buf, n);
    size_t at = window.find(needle);
    if (at != std::string::npos && (at + keep <= window.size() || !in)) {
      return window.substr(at, keep);
    }
    if (at == std::string::npos && window.size() > keep) window.erase(0, window.size() - keep);
  }
  return std::nullopt;
}

std::string FsTree::canonical(const std::string& path) const {
  std::error_code ec;
  fs::path p = fs::canonical(path, ec);
  return ec ? path : p.string();
}

}  // namespace lockstep::verify
