#include "webhooks/certs/x509.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

namespace lockstep::webhooks {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
void freeGeneralNames(GENERAL_NAMES* n) { GENERAL_NAMES_free(n); }
using NamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, freeGeneralNames>>;

// The OpenSSL error queue as text (and cleared), for messages.
std::string sslError(std::string_view what) {
  std::string out(what);
  unsigned long e;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof buf);
    out += ": ";
    out += buf;
  }
  return out;
}

StatusOr<PkeyPtr> generateKey(KeyType type) {
  EVP_PKEY* k = type == KeyType::kEcdsaP256
                    ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                    : EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048});
  if (k == nullptr) return internalError(sslError("generating key"));
  return PkeyPtr(k);
}

StatusOr<X509Ptr> readCert(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return internalError("BIO_new_mem_buf");
  X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
  if (x == nullptr) {
    ERR_clear_error();
    return invalidArgument("not a PEM certificate");
  }
  return X509Ptr(x);
}

StatusOr<PkeyPtr> readKey(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return internalError("BIO_new_mem_buf");
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (k == nullptr) {
    ERR_clear_error();
    return invalidArgument("not a PEM private key");
  }
  return PkeyPtr(k);
}

std::string toPem(X509* x) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), x);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string toPem(EVP_PKEY* k) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

SystemTime fromAsn1(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return SystemTime{};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

bool validDnsName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '*'))
      return false;
  }
  return true;
}

bool validIp(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

Status addExt(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return internalError(sslError("certificate extension " + std::string(OBJ_nid2sn(nid))));
  }
  return Status::ok();
}

struct Issuer {
  X509* cert;  // nullptr: self-signed
  EVP_PKEY* key;
};

// Builds and signs one certificate for `key`.
StatusOr<X509Ptr> issue(EVP_PKEY* key, const std::string& cn, SystemTime now,
                        std::chrono::seconds validity, const Issuer& issuer,
                        const std::vector<std::pair<int, std::string>>& extensions) {
  X509Ptr x(X509_new());
  if (!x) return internalError("X509_new");
  X509_set_version(x.get(), 2);
  // 127 random bits: positive, unique, and within the 20-octet limit.
  BnPtr serial(BN_new());
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(x.get())) == nullptr) {
    return internalError(sslError("certificate serial"));
  }
  const std::time_t start = std::chrono::system_clock::to_time_t(now - kBackdate);
  const std::time_t end = std::chrono::system_clock::to_time_t(now + validity);
  if (ASN1_TIME_set(X509_getm_notBefore(x.get()), start) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(x.get()), end) == nullptr) {
    return internalError(sslError("certificate validity"));
  }
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer.cert != nullptr ? X509_get_subject_name(issuer.cert) : name);
  if (X509_set_pubkey(x.get(), key) != 1) return internalError(sslError("certificate public key"));

  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer.cert != nullptr ? issuer.cert : x.get(), x.get(), nullptr, nullptr,
                 0);
  for (const auto& [nid, value] : extensions)
    LOCKSTEP_RETURN_IF_ERROR(addExt(x.get(), &ctx, nid, value));
  LOCKSTEP_RETURN_IF_ERROR(addExt(x.get(), &ctx, NID_subject_key_identifier, "hash"));
  LOCKSTEP_RETURN_IF_ERROR(addExt(x.get(), &ctx, NID_authority_key_identifier, "keyid:always"));
  if (X509_sign(x.get(), issuer.key, EVP_sha256()) == 0)
    return internalError(sslError("signing certificate"));
  return x;
}

}  // namespace

std::vector<std::string> serviceDnsNames(std::string_view service, std::string_view ns) {
  std::string s(service), n(ns);
  return {s, s + "." + n, s + "." + n + ".svc", s + "." + n + ".svc.cluster.local"};
}

StatusOr<CertKeyPair> generateCa(const CaOptions& o) {
  if (o.validity.count() <= 0) return invalidArgument("CA validity must be positive");
  try {
    StatusOr<PkeyPtr> key = generateKey(o.keyType);
    if (!key.isOk()) return key.status();
    StatusOr<X509Ptr> cert =
        issue(key->get(), o.commonName, o.now, o.validity, Issuer{nullptr, key->get()},
              {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
               {NID_key_usage, "critical,keyCertSign,cRLSign"}});
    if (!cert.isOk()) return cert.status();
    return CertKeyPair{toPem(cert->get()), toPem(key->get())};
  } catch (const std::exception& e) {
    return internalError(std::string("generating CA: ") + e.what());
  }
}

StatusOr<CertKeyPair> generateServingCert(const CertKeyPair& ca, const ServingOptions& o) {
  if (o.validity.count() <= 0)
    return invalidArgument("serving certificate validity must be positive");
  if (o.dnsNames.empty() && o.ipAddresses.empty()) {
    return invalidArgument("serving certificate needs at least one DNS name or IP address");
  }
  std::string san;
  for (const std::string& d : o.dnsNames) {
    if (!validDnsName(d))
      return invalidArgument("invalid DNS name \"" + d + "\" for a certificate");
    san += (san.empty() ? "DNS:" : ",DNS:") + d;
  }
  for (const std::string& ip : o.ipAddresses) {
    if (!validIp(ip)) return invalidArgument("invalid IP address \"" + ip + "\" for a certificate");
    san += (san.empty() ? "IP:" : ",IP:") + ip;
  }
  try {
    StatusOr<X509Ptr> caCert = readCert(ca.certPem);
    if (!caCert.isOk()) return caCert.status().withContext("CA certificate");
    StatusOr<PkeyPtr> caKey = readKey(ca.keyPem);
    if (!caKey.isOk()) return caKey.status().withContext("CA key");
    StatusOr<PkeyPtr> key = generateKey(o.keyType);
    if (!key.isOk()) return key.status();
    std::string usage = o.keyType == KeyType::kRsa2048 ? "critical,digitalSignature,keyEncipherment"
                                                       : "critical,digitalSignature";
    StatusOr<X509Ptr> cert =
        issue(key->get(), o.commonName, o.now, o.validity, Issuer{caCert->get(), caKey->get()},
              {{NID_basic_constraints, "critical,CA:FALSE"},
               {NID_key_usage, usage},
               {NID_ext_key_usage, "serverAuth"},
               {NID_subject_alt_name, san}});
    if (!cert.isOk()) return cert.status();
    return CertKeyPair{toPem(cert->get()), toPem(key->get())};
  } catch (const std::exception& e) {
    return internalError(std::string("generating serving certificate: ") + e.what());
  }
}

StatusOr<CertInfo> parseCertificate(std::string_view pem) {
  StatusOr<X509Ptr> cert = readCert(pem);
  if (!cert.isOk()) return cert.status();
  X509* x = cert->get();
  CertInfo info;
  info.notBefore = fromAsn1(X509_get0_notBefore(x));
  info.notAfter = fromAsn1(X509_get0_notAfter(x));
  char cn[256] = {0};
  if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn) > 0) {
    info.commonName = cn;
  }
  info.isCa = X509_check_ca(x) > 0;
  NamesPtr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr)));
  if (names) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
      if (n->type == GEN_DNS) {
        const ASN1_STRING* s = n->d.dNSName;
        info.dnsNames.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                   static_cast<std::size_t>(ASN1_STRING_length(s)));
      } else if (n->type == GEN_IPADD) {
        const ASN1_OCTET_STRING* s = n->d.iPAddress;
        char buf[INET6_ADDRSTRLEN] = {0};
        int len = ASN1_STRING_length(s);
        if ((len == 4 || len == 16) &&
            inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(s), buf, sizeof buf) !=
                nullptr) {
          info.ipAddresses.emplace_back(buf);
        }
      }
    }
  }
  ERR_clear_error();
  return info;
}

Status checkKeyMatchesCert(std::string_view certPem, std::string_view keyPem) {
  StatusOr<X509Ptr> cert = readCert(certPem);
  if (!cert.isOk()) return cert.status();
  StatusOr<PkeyPtr> key = readKey(keyPem);
  if (!key.isOk()) return key.status();
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return invalidArgument("private key does not match the certificate");
  }
  return Status::ok();
}

Status checkIssuedBy(std::string_view certPem, std::string_view caPem) {
  StatusOr<X509Ptr> cert = readCert(certPem);
  if (!cert.isOk()) return cert.status();
  StatusOr<X509Ptr> ca = readCert(caPem);
  if (!ca.isOk()) return ca.status().withContext("CA");
  EVP_PKEY* caKey = X509_get0_pubkey(ca->get());
  if (caKey == nullptr || X509_verify(cert->get(), caKey) != 1) {
    ERR_clear_error();
    return invalidArgument("certificate is not signed by the CA");
  }
  return Status::ok();
}

}  // namespace lockstep::webhooks
