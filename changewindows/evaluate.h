// The change windows' answer at an instant: may new work start, what work in flight does,
// may a manual rollback run, and when the answer next changes. The clock is an input; this
// never reads time.
//
// Rules (docs/change-windows.md): Deny wins. Inside any Deny window the model is closed.
// Otherwise, with no Allow window the model is open; with Allow windows it is open only
// inside one of them. While closed, work in flight follows the strictest inFlight of the
// windows that close it (the active Deny windows; outside every Allow window, the Allow
// windows), and a manual rollback is refused if one of them says rollbacks: Deny.
//
// A window is active from each occurrence of its rule (in its time zone, RFC 5545's reading
// of skipped and repeated local times) for its duration: [start, start + duration).
// Occurrences are searched kHorizonSeconds ahead and at most kMaxOccurrences per window; a
// transition beyond that is not reported (horizon says how far the search went: re-evaluate
// by then).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "changewindows/change_window.h"

namespace lockstep::changewindows {

inline constexpr int64_t kHorizonSeconds = 400 * 86400LL;
inline constexpr size_t kMaxOccurrences = 20000;

// The answer at one instant.
struct WindowState {
  bool open = true;
  // The windows (indices in spec.changeWindows) that decide: closed, the active Deny windows
  // or (outside every Allow window) all Allow windows; open, the active Allow windows (none
  // when no Allow window exists).
  std::vector<size_t> deciding;
  InFlight inFlight = InFlight::kFinishStep;  // closed: what work in flight does
  bool rollbacksAllowed = true;

  // The parts a controller acts on (not `deciding`): a change of these is a transition.
  bool sameAnswer(const WindowState& o) const;
};

struct WindowEvaluation {
  WindowState state;
  std::optional<int64_t> nextTransition;  // the first instant after `now` the answer changes
  std::optional<int64_t> nextOpen;        // closed now: the first instant it opens
  std::optional<int64_t> nextClose;       // open now: the first instant it closes
  int64_t horizon = 0;  // searched up to here; nothing found means nothing before it
  // For a condition message: "closed by Deny window \"freeze\" (spec.changeWindows[0]) until
  // 2026-12-07T08:00:00+01:00; work in flight: finishStep; rollbacks allowed".
  std::string message;
};

WindowEvaluation evaluateChangeWindows(const std::vector<ChangeWindow>& windows, int64_t now);

// The intervals [start, end) in which `window` is active that end after `from` and start
// no later than `to`, merged where they overlap or touch, ascending; *truncated when
// kMaxOccurrences cut the search short (the intervals are then right only up to the last
// start returned).
struct ActiveInterval {
  int64_t start = 0;
  int64_t end = 0;
};
std::vector<ActiveInterval> activeIntervals(const ChangeWindow& window, int64_t from, int64_t to,
                                            bool* truncated);

}  // namespace lockstep::changewindows
