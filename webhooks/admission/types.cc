#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

NamespaceMode parseNamespaceMode(std::optional<std::string_view> labelValue) {
  if (!labelValue || labelValue->empty()) return NamespaceMode::kUnset;
  if (*labelValue == "enforce") return NamespaceMode::kEnforce;
  if (*labelValue == "warn") return NamespaceMode::kWarn;
  if (*labelValue == "audit") return NamespaceMode::kAudit;
  if (*labelValue == "off") return NamespaceMode::kOff;
  return NamespaceMode::kEnforce;  // fail closed on typos
}

std::string_view namespaceModeName(NamespaceMode m) {
  switch (m) {
    case NamespaceMode::kUnset:
      return "unset";
    case NamespaceMode::kEnforce:
      return "enforce";
    case NamespaceMode::kWarn:
      return "warn";
    case NamespaceMode::kAudit:
      return "audit";
    case NamespaceMode::kOff:
      return "off";
  }
  return "unset";
}

Operation parseOperation(std::string_view s) {
  if (s == "CREATE") return Operation::kCreate;
  if (s == "UPDATE") return Operation::kUpdate;
  if (s == "DELETE") return Operation::kDelete;
  if (s == "CONNECT") return Operation::kConnect;
  return Operation::kUnknown;
}

std::string_view operationName(Operation op) {
  switch (op) {
    case Operation::kCreate:
      return "CREATE";
    case Operation::kUpdate:
      return "UPDATE";
    case Operation::kDelete:
      return "DELETE";
    case Operation::kConnect:
      return "CONNECT";
    case Operation::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::string_view decisionName(Decision d) {
  switch (d) {
    case Decision::kAllowed:
      return "allowed";
    case Decision::kDenied:
      return "denied";
    case Decision::kWarned:
      return "warned";
    case Decision::kAudited:
      return "audited";
    case Decision::kError:
      return "error";
  }
  return "error";
}

}  // namespace lockstep::webhooks
