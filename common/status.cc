#include "common/status.h"

namespace lockstep {

std::string_view codeName(Code c) {
  switch (c) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kNotFound:
      return "NotFound";
    case Code::kAlreadyExists:
      return "AlreadyExists";
    case Code::kConflict:
      return "Conflict";
    case Code::kInvalid:
      return "Invalid";
    case Code::kForbidden:
      return "Forbidden";
    case Code::kUnauthorized:
      return "Unauthorized";
    case Code::kGone:
      return "Gone";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kDeadlineExceeded:
      return "DeadlineExceeded";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kCancelled:
      return "Cancelled";
    case Code::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  std::string out(codeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::withContext(std::string_view context) const {
  if (isOk()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return {code_, std::move(m)};
}

}  // namespace lockstep
