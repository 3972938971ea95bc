// A serving certificate in memory, and the interface of whatever serves it.
// Thread-safety: TlsCertificate is a value; CertificateSink implementations
// must accept calls from any thread.
#pragma once

#include <string>

#include "common/status.h"

namespace lockstep::webhooks {

// PEM text kept in memory only (never logged).
struct TlsCertificate {
  std::string certChainPem;  // leaf first, then intermediates
  std::string keyPem;

  bool operator==(const TlsCertificate& o) const {
    return certChainPem == o.certChainPem && keyPem == o.keyPem;
  }
};

// Takes a new serving certificate (the webhook Server implements this).
class CertificateSink {
 public:
  virtual ~CertificateSink() = default;
  virtual Status setCertificate(const TlsCertificate& cert) = 0;
};

}  // namespace lockstep::webhooks
