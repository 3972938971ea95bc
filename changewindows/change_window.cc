#include "changewindows/change_window.h"

namespace lockstep::changewindows {

namespace v1 = api::v1alpha1;

const char* inFlightName(InFlight f) {
  switch (f) {
    case InFlight::kPause:
      return v1::kInFlightPause;
    case InFlight::kAbort:
      return v1::kInFlightAbort;
    case InFlight::kFinishStep:
      break;
  }
  return v1::kInFlightFinishStep;
}

std::string ChangeWindow::label() const {
  std::string out = deny ? "Deny window" : "Allow window";
  if (!name.empty()) out += " \"" + name + "\"";
  return out + " (spec.changeWindows[" + std::to_string(index) + "])";
}

StatusOr<std::vector<ChangeWindow>> compileChangeWindows(
    const std::vector<v1::ChangeWindowSpec>& specs, const std::string& path) {
  std::vector<std::string> errors;
  if (specs.size() > v1::kMaxChangeWindows) {
    errors.push_back(path + ": at most " + std::to_string(v1::kMaxChangeWindows) +
                     " windows, got " + std::to_string(specs.size()));
  }
  std::vector<ChangeWindow> out;
  for (size_t i = 0; i < specs.size() && i < v1::kMaxChangeWindows; ++i) {
    const v1::ChangeWindowSpec& s = specs[i];
    const std::string at = path + "[" + std::to_string(i) + "].";
    const size_t before = errors.size();
    const auto fail = [&errors, &at](const char* field, const std::string& why) {
      errors.push_back(at + field + ": " + why);
    };
    const auto quoted = [](const std::string& v) { return "\"" + v + "\""; };
    if (s.name.size() > v1::kMaxChangeWindowNameLength) {
      fail("name", "longer than " + std::to_string(v1::kMaxChangeWindowNameLength) + " characters");
    }
    if (s.kind != v1::kChangeWindowAllow && s.kind != v1::kChangeWindowDeny) {
      fail("kind", "must be Allow or Deny, got " + quoted(s.kind));
    }
    StatusOr<Recurrence> rule = invalidArgument("");
    if (s.rrule.size() > v1::kMaxChangeWindowRruleLength) {
      fail("rrule",
           "longer than " + std::to_string(v1::kMaxChangeWindowRruleLength) + " characters");
    } else {
      rule = Recurrence::parse(s.rrule);
      if (!rule.isOk()) fail("rrule", rule.status().message());
    }
    StatusOr<WindowDuration> duration = parseWindowDuration(s.duration);
    if (!duration.isOk()) fail("duration", duration.status().message());
    StatusOr<TimeZone> zone = TimeZone::load(s.timeZone);
    if (!zone.isOk()) fail("timeZone", zone.status().message());
    InFlight inFlight = InFlight::kFinishStep;
    if (s.inFlight == v1::kInFlightPause) {
      inFlight = InFlight::kPause;
    } else if (s.inFlight == v1::kInFlightAbort) {
      inFlight = InFlight::kAbort;
    } else if (s.inFlight != v1::kInFlightFinishStep) {
      fail("inFlight", "must be finishStep, pause or abort, got " + quoted(s.inFlight));
    }
    if (s.rollbacks != v1::kRollbacksAllow && s.rollbacks != v1::kRollbacksDeny) {
      fail("rollbacks", "must be Allow or Deny, got " + quoted(s.rollbacks));
    }
    if (errors.size() != before) continue;
    out.push_back(ChangeWindow{i, s.name, s.kind == v1::kChangeWindowDeny, std::move(*rule),
                               std::move(*zone), *duration, inFlight,
                               s.rollbacks == v1::kRollbacksDeny});
  }
  if (!errors.empty()) {
    std::string message;
    for (const std::string& e : errors) message += (message.empty() ? "" : "; ") + e;
    return invalidArgument(message);
  }
  return out;
}

}  // namespace lockstep::changewindows
