#include "evidence/ecdsa_p256.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/base64.h"

namespace lockstep::evidence {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Bio = std::unique_ptr<BIO, BioFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// The last OpenSSL error as text, clearing the thread's error queue.
std::string opensslError() {
  unsigned long code = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

Status checkP256(EVP_PKEY* key, const std::string& origin) {
  if (EVP_PKEY_is_a(key, "EC") != 1) return invalidArgument(origin + ": not an EC key");
  char group[64] = {};
  size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len) !=
          1 ||
      std::string_view(group, len) != "prime256v1") {
    return invalidArgument(origin + ": not a P-256 (prime256v1) key");
  }
  return Status::ok();
}

// A password callback that refuses: an encrypted PEM fails instead of prompting.
int noPassword(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

class P256PublicKey : public PublicKey {
 public:
  explicit P256PublicKey(Pkey key) : key_(std::move(key)) {
    unsigned char* der = nullptr;
    const int len = i2d_PUBKEY(key_.get(), &der);
    if (len > 0) {
      unsigned char md[EVP_MAX_MD_SIZE];
      unsigned int mdLen = 0;
      EVP_Digest(der, static_cast<size_t>(len), md, &mdLen, EVP_sha256(), nullptr);
      hint_ = base64Encode(std::string_view(reinterpret_cast<const char*>(md), mdLen));
    }
    OPENSSL_free(der);
    Bio bio(BIO_new(BIO_s_mem()));
    if (bio && PEM_write_bio_PUBKEY(bio.get(), key_.get()) == 1) {
      char* data = nullptr;
      const long n = BIO_get_mem_data(bio.get(), &data);  // NOLINT(google-runtime-int)
      pem_.assign(data, static_cast<size_t>(n));
    }
  }

  std::string hint() const override { return hint_; }
  std::string pem() const override { return pem_; }

  bool verify(std::string_view message, std::string_view signature) const override {
    MdCtx ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1) {
      ERR_clear_error();
      return false;
    }
    const int rc = EVP_DigestVerify(
        ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
        reinterpret_cast<const unsigned char*>(message.data()), message.size());
    ERR_clear_error();  // a bad signature leaves decoding errors behind
    return rc == 1;
  }

  EVP_PKEY* raw() const { return key_.get(); }

 private:
  Pkey key_;
  std::string hint_;
  std::string pem_;
};

class P256Signer : public Signer {
 public:
  P256Signer(Pkey priv, std::shared_ptr<const P256PublicKey> pub)
      : priv_(std::move(priv)), pub_(std::move(pub)) {}

  const PublicKey& publicKey() const override { return *pub_; }

  StatusOr<std::string> sign(std::string_view message) const override {
    MdCtx ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, priv_.get()) != 1) {
      return internalError("ECDSA sign: " + opensslError());
    }
    const auto* data = reinterpret_cast<const unsigned char*>(message.data());
    size_t len = 0;
    if (EVP_DigestSign(ctx.get(), nullptr, &len, data, message.size()) != 1) {
      return internalError("ECDSA sign: " + opensslError());
    }
    std::string sig(len, '\0');
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, data,
                       message.size()) != 1) {
      return internalError("ECDSA sign: " + opensslError());
    }
    sig.resize(len);  // a DER signature's length varies with its integers
    return sig;
  }

 private:
  Pkey priv_;
  std::shared_ptr<const P256PublicKey> pub_;
};

}  // namespace

StatusOr<std::shared_ptr<const PublicKey>> parseP256PublicKey(std::string_view pem,
                                                              const std::string& origin) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Pkey key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, noPassword, nullptr) : nullptr);
  if (!key) return invalidArgument(origin + ": not a PEM public key: " + opensslError());
  LOCKSTEP_RETURN_IF_ERROR(checkP256(key.get(), origin));
  return std::shared_ptr<const PublicKey>(std::make_shared<P256PublicKey>(std::move(key)));
}

StatusOr<std::unique_ptr<Signer>> parseP256PrivateKey(std::string_view pem,
                                                      const std::string& origin) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Pkey priv(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, noPassword, nullptr) : nullptr);
  if (!priv) {
    return invalidArgument(origin + ": not an unencrypted PEM private key: " + opensslError());
  }
  LOCKSTEP_RETURN_IF_ERROR(checkP256(priv.get(), origin));
  // The public half, through its DER encoding: a key object of its own.
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(priv.get(), &der);
  const unsigned char* p = der;
  Pkey pub(len > 0 ? d2i_PUBKEY(nullptr, &p, len) : nullptr);
  OPENSSL_free(der);
  if (!pub) return internalError(origin + ": public key: " + opensslError());
  return std::unique_ptr<Signer>(std::make_unique<P256Signer>(
      std::move(priv), std::make_shared<P256PublicKey>(std::move(pub))));
}

}  // namespace lockstep::evidence
