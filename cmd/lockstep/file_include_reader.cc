#include "cmd/lockstep/file_include_reader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace lockstep::cli {

StatusOr<std::string> readFile(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return invalidArgument(path + ": read error");
  return ss.str();
}

StatusOr<std::string> FileIncludeReader::read(const std::string& name) const {
  return readFile(directory_.empty() ? name : directory_ + "/" + name);
}

}  // namespace lockstep::cli
