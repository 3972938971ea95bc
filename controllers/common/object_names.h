// Names of the objects the controllers create (Jobs, ConfigMaps): at most 63
// characters, a DNS label, so a Job's pods (label job-name) are valid too.
#pragma once

#include <string>

namespace lockstep::controllers {

// `full` when it fits in 63 characters; else a prefix of it (no trailing '-'
// or '.') and "-" + the first 8 hex digits of its SHA-256: stable and distinct.
std::string dnsLabelName(const std::string& full);

}  // namespace lockstep::controllers
