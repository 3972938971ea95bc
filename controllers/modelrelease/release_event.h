// An Event a ModelRelease planner decided to record on the release.
// Thread-safety: a value.
#pragma once

#include <string>

namespace lockstep::controllers {

struct ReleaseEvent {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
};

}  // namespace lockstep::controllers
