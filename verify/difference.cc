#include "verify/difference.h"

namespace lockstep::verify {

std::string_view diffKindName(DiffKind k) {
  switch (k) {
    case DiffKind::kMissing:
      return "missing";
    case DiffKind::kExtra:
      return "extra";
    case DiffKind::kVersion:
      return "version";
    case DiffKind::kDigest:
      return "digest";
    case DiffKind::kCommit:
      return "commit";
    case DiffKind::kHost:
      return "host";
  }
  return "host";
}

std::string describe(const Difference& d) {
  std::string out = d.ecosystem + " " + d.package + ": ";
  if (d.kind != DiffKind::kHost) {
    out += diffKindName(d.kind);
    out += ": ";
  }
  if (d.kind == DiffKind::kExtra) {
    out += "installed " + d.found + ", not in the lock";
  } else if (d.kind == DiffKind::kMissing) {
    out += "expected " + d.expected + ", " + (d.found.empty() ? "absent" : d.found);
  } else {
    out += "expected " + d.expected + ", found " + (d.found.empty() ? "none" : d.found);
  }
  if (!d.where.empty()) out += " (" + d.where + ")";
  return out;
}

}  // namespace lockstep::verify
