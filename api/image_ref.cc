#include "api/image_ref.h"

#include <cctype>

namespace lockstep::api {
namespace {

constexpr std::string_view kDockerHub = "docker.io";

bool isLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool isPathChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
         c == '/';
}

bool isDomainChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == ':' ||
         c == '[' || c == ']';
}

bool isTagChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool isSha256Digest(std::string_view s) {
  constexpr std::string_view kPrefix = "sha256:";
  if (s.size() != kPrefix.size() + 64 || s.substr(0, kPrefix.size()) != kPrefix) return false;
  for (char c : s.substr(kPrefix.size())) {
    if (!isLowerHex(c)) return false;
  }
  return true;
}

StatusOr<ImageRef> parseImageRef(std::string_view ref) {
  if (ref.empty()) return invalidArgument("empty image reference");
  if (ref.size() > 4096) return invalidArgument("image reference too long");
  ImageRef out;
  std::string_view rest = ref;

  if (auto at = rest.find('@'); at != std::string_view::npos) {
    std::string_view digest = rest.substr(at + 1);
    if (!isSha256Digest(digest)) {
      return invalidArgument("digest \"" + std::string(digest) + "\" is not sha256:<64 hex>");
    }
    out.digest = std::string(digest);
    rest = rest.substr(0, at);
  }
  // A tag is a ':' after the last '/', so "host:5000/repo" keeps its port.
  auto lastSlash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string_view::npos &&
      (lastSlash == std::string_view::npos || colon > lastSlash)) {
    std::string_view tag = rest.substr(colon + 1);
    if (tag.empty() || tag.size() > 128)
      return invalidArgument("invalid tag in \"" + std::string(ref) + "\"");
    for (char c : tag) {
      if (!isTagChar(c)) return invalidArgument("invalid tag in \"" + std::string(ref) + "\"");
    }
    out.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return invalidArgument("missing repository in \"" + std::string(ref) + "\"");

  auto slash = rest.find('/');
  std::string_view first = rest.substr(0, slash);
  bool hasDomain = slash != std::string_view::npos &&
                   (first.find('.') != std::string_view::npos ||
                    first.find(':') != std::string_view::npos || first == "localhost");
  std::string_view path = rest;
  if (hasDomain) {
    for (char c : first) {
      if (!isDomainChar(c))
        return invalidArgument("invalid registry in \"" + std::string(ref) + "\"");
    }
    // A port, when present, is numeric ("app:bad/x" is not a registry).
    if (auto portAt = first.rfind(':');
        portAt != std::string_view::npos && first.find(']', portAt) == std::string_view::npos) {
      std::string_view port = first.substr(portAt + 1);
      if (port.empty() || port.size() > 5)
        return invalidArgument("invalid registry port in \"" + std::string(ref) + "\"");
      for (char c : port) {
        if (c < '0' || c > '9')
          return invalidArgument("invalid registry port in \"" + std::string(ref) + "\"");
      }
    }
    out.domain = lower(first);
    if (out.domain == "index.docker.io" || out.domain == "registry-1.docker.io") {
      out.domain = std::string(kDockerHub);
    }
    path = rest.substr(slash + 1);
  } else {
    out.domain = std::string(kDockerHub);
  }
  if (path.empty() || path.front() == '/' || path.back() == '/' ||
      path.find("//") != std::string_view::npos) {
    return invalidArgument("invalid repository path in \"" + std::string(ref) + "\"");
  }
  for (char c : path) {
    if (!isPathChar(c)) {
      return invalidArgument("invalid character in repository of \"" + std::string(ref) +
                             "\" (repositories are lowercase)");
    }
  }
  out.path = std::string(path);
  if (out.domain == kDockerHub && out.path.find('/') == std::string::npos) {
    out.path = "library/" + out.path;
  }
  return out;
}

bool sameImage(std::string_view a, std::string_view b) {
  StatusOr<ImageRef> x = parseImageRef(a);
  StatusOr<ImageRef> y = parseImageRef(b);
  return x.isOk() && y.isOk() && x->pinned() && y->pinned() && x->repository() == y->repository() &&
         x->digest == y->digest;
}

}  // namespace lockstep::api
