package check

import "crypto/tls"

// TLSConfig mirrors Lockstep's server settings (webhooks/server/tls_context.cc):
// TLS 1.2 minimum, ECDHE with AES-GCM or ChaCha20-Poly1305 only.
func TLSConfig(cfg *tls.Config) {
	cfg.MinVersion = tls.VersionTLS12
	cfg.CipherSuites = []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,
	}
}
