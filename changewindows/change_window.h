// A Model's spec.changeWindows, checked and compiled: each window's rule parsed (libical),
// its time zone loaded (cctz), its duration read. Every error names its field path
// ("spec.changeWindows[1].rrule: ..."), all of them at once.
// Thread-safety: values and pure functions (loading a zone reads tzdata's file once).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "api/v1alpha1/model.h"
#include "changewindows/recurrence.h"
#include "changewindows/time_zone.h"
#include "changewindows/window_duration.h"
#include "common/status.h"

namespace lockstep::changewindows {

// What work already in flight does when a window closes the model (docs/change-windows.md):
// ordered from the mildest to the strictest, so that the strictest of several wins.
enum class InFlight { kFinishStep = 0, kPause = 1, kAbort = 2 };
const char* inFlightName(InFlight f);  // the spec's spelling: finishStep, pause, abort

struct ChangeWindow {
  size_t index = 0;  // in spec.changeWindows
  std::string name;  // may be empty
  bool deny = false;
  Recurrence rule;
  TimeZone zone;
  WindowDuration duration;
  InFlight inFlight = InFlight::kFinishStep;
  bool rollbacksDenied = false;

  // For messages: "Deny window \"weekend-freeze\" (spec.changeWindows[0])".
  std::string label() const;
};

// The windows of `specs`, or InvalidArgument naming every field that is wrong, below
// `path` ("spec.changeWindows"), joined by "; ".
StatusOr<std::vector<ChangeWindow>> compileChangeWindows(
    const std::vector<api::v1alpha1::ChangeWindowSpec>& specs,
    const std::string& path = "spec.changeWindows");

}  // namespace lockstep::changewindows
