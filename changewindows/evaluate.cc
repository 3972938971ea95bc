#include "changewindows/evaluate.h"

#include <algorithm>

namespace lockstep::changewindows {

bool WindowState::sameAnswer(const WindowState& o) const {
  if (open != o.open || rollbacksAllowed != o.rollbacksAllowed) return false;
  return open || inFlight == o.inFlight;
}

std::vector<ActiveInterval> activeIntervals(const ChangeWindow& window, int64_t from, int64_t to,
                                            bool* truncated) {
  // An occurrence starting up to its longest duration before `from` may still be active. The
  // civil range is widened by a day each side: a zone's offset moves the wall clock by at
  // most that much against the instants.
  const CivilSecond civilFrom =
      addCivil(window.zone.toCivil(from - window.duration.maxSeconds()), -1);
  const CivilSecond civilTo = addCivil(window.zone.toCivil(to), 1);
  const std::vector<CivilSecond> starts =
      window.rule.starts(civilFrom, civilTo, kMaxOccurrences, truncated);
  std::vector<ActiveInterval> out;
  for (const CivilSecond& s : starts) {
    const int64_t start = window.zone.toInstant(s);
    if (start > to) break;
    if (window.rule.untilUtc() && start > *window.rule.untilUtc()) break;
    const int64_t end =
        (window.duration.days == 0 ? start
                                   : window.zone.toInstant(addCivil(s, window.duration.days))) +
        window.duration.seconds;
    if (end <= from || end <= start) continue;
    if (!out.empty() && start <= out.back().end) {
      out.back().end = std::max(out.back().end, end);
    } else {
      out.push_back({start, end});
    }
  }
  return out;
}

namespace {

bool activeAt(const std::vector<ActiveInterval>& intervals, int64_t t) {
  // The first interval ending after t; active when it has started.
  const auto it = std::upper_bound(intervals.begin(), intervals.end(), t,
                                   [](int64_t v, const ActiveInterval& i) { return v < i.end; });
  return it != intervals.end() && it->start <= t;
}

WindowState stateAt(const std::vector<ChangeWindow>& windows,
                    const std::vector<std::vector<ActiveInterval>>& intervals, int64_t t) {
  WindowState s;
  std::vector<size_t> activeDeny, activeAllow, allows;
  for (size_t i = 0; i < windows.size(); ++i) {
    const bool active = activeAt(intervals[i], t);
    if (windows[i].deny) {
      if (active) activeDeny.push_back(i);
    } else {
      allows.push_back(i);
      if (active) activeAllow.push_back(i);
    }
  }
  const std::vector<size_t>* closing = nullptr;
  if (!activeDeny.empty()) {
    closing = &activeDeny;
  } else if (!allows.empty() && activeAllow.empty()) {
    closing = &allows;
  }
  if (closing == nullptr) {
    s.open = true;
    for (size_t i : activeAllow) s.deciding.push_back(windows[i].index);
    return s;
  }
  s.open = false;
  for (size_t i : *closing) {
    s.deciding.push_back(windows[i].index);
    s.inFlight = std::max(s.inFlight, windows[i].inFlight);
    if (windows[i].rollbacksDenied) s.rollbacksAllowed = false;
  }
  return s;
}

const ChangeWindow* byIndex(const std::vector<ChangeWindow>& windows, size_t index) {
  for (const ChangeWindow& w : windows) {
    if (w.index == index) return &w;
  }
  return nullptr;
}

std::string describe(const std::vector<ChangeWindow>& windows, const WindowEvaluation& e) {
  const WindowState& s = e.state;
  std::string labels;
  const ChangeWindow* first = nullptr;
  for (size_t i : s.deciding) {
    const ChangeWindow* w = byIndex(windows, i);
    if (w == nullptr) continue;
    if (first == nullptr) first = w;
    labels += (labels.empty() ? "" : ", ") + w->label();
  }
  // Instants in the zone of the first deciding window (UTC without one).
  const auto when = [&](int64_t t) {
    if (first != nullptr) return first->zone.format(t);
    const StatusOr<TimeZone> utc = TimeZone::load("UTC");
    return utc.isOk() ? utc->format(t) : std::to_string(t);
  };
  std::string out;
  if (s.open) {
    out = s.deciding.empty() ? (windows.empty() ? "open: no change window" : "open")
                             : "open inside " + labels;
    if (e.nextClose) {
      out += " until " + when(*e.nextClose);
    } else if (!windows.empty()) {
      out += "; no window closes it before " + when(e.horizon);
    }
    return out;
  }
  const bool byDeny = first != nullptr && first->deny;
  out = byDeny ? "closed by " + labels : "closed: outside every Allow window";
  if (e.nextOpen) {
    out += "; opens " + when(*e.nextOpen);
  } else {
    out += "; does not open before " + when(e.horizon);
  }
  out += std::string("; work in flight: ") + inFlightName(s.inFlight);
  out += s.rollbacksAllowed ? "; rollbacks allowed" : "; rollbacks refused";
  return out;
}

}  // namespace

WindowEvaluation evaluateChangeWindows(const std::vector<ChangeWindow>& windows, int64_t now) {
  WindowEvaluation e;
  e.horizon = now + kHorizonSeconds;
  std::vector<std::vector<ActiveInterval>> intervals;
  intervals.reserve(windows.size());
  for (const ChangeWindow& w : windows) {
    bool truncated = false;
    intervals.push_back(activeIntervals(w, now, now + kHorizonSeconds, &truncated));
    // Past the last occurrence found, the window's intervals are unknown: search no further.
    if (truncated && !intervals.back().empty()) {
      e.horizon = std::min(e.horizon, intervals.back().back().start);
    }
  }
  e.state = stateAt(windows, intervals, now);
  std::vector<int64_t> boundaries;
  for (const std::vector<ActiveInterval>& list : intervals) {
    for (const ActiveInterval& i : list) {
      if (i.start > now && i.start <= e.horizon) boundaries.push_back(i.start);
      if (i.end > now && i.end <= e.horizon) boundaries.push_back(i.end);
    }
  }
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
  for (int64_t b : boundaries) {
    const WindowState next = stateAt(windows, intervals, b);
    if (!e.nextTransition && !next.sameAnswer(e.state)) e.nextTransition = b;
    if (next.open != e.state.open) {
      (e.state.open ? e.nextClose : e.nextOpen) = b;
      break;
    }
  }
  e.message = describe(windows, e);
  return e;
}

}  // namespace lockstep::changewindows
