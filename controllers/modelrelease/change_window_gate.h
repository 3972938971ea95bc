// The model's change windows as the release planners see them (pure values,
// docs/change-windows.md): set only while the windows keep the model closed.
// The shell compiles a Model's spec.changeWindows once per generation and
// evaluates them at the reconcile's instant (changewindows/evaluate.h); the
// planners never read a clock or parse a rule.
//
// Closed: nothing new starts (no gate Job, no canary, no next canary step, no
// promotion: WaitingForWindow); work in flight follows `inFlight`; a manual
// rollback runs unless `rollbacksAllowed` is false. A canary's automatic
// rollback is never held. Thread-safety: a value.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace lockstep::controllers {

struct ClosedWindow {
  // What work already in flight does (the strictest of the windows that close the model).
  enum class InFlight { kFinishStep, kPause, kAbort };
  InFlight inFlight = InFlight::kFinishStep;
  bool rollbacksAllowed = true;
  // "closed by Deny window \"freeze\" (spec.changeWindows[0]) until ...", or why the
  // windows cannot be read (then the model is closed: a typo never opens a freeze).
  std::string message;
  int64_t nextTransition = 0;  // seconds since the epoch the answer may change; 0: unknown

  // Seconds until the next look: the transition, at least 1 s, at most an hour.
  int64_t requeueSeconds(int64_t nowUnix) const {
    if (nextTransition <= nowUnix) return nextTransition == 0 ? 3600 : 1;
    return std::min<int64_t>(nextTransition - nowUnix, 3600);
  }
};

inline constexpr const char* kReasonWaitingForWindow = "WaitingForWindow";

}  // namespace lockstep::controllers
