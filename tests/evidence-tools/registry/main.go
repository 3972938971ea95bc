// Command registry serves go-containerregistry's pkg/registry, an OCI registry
// with the OCI 1.1 referrers API (GET /v2/<name>/referrers/<digest>), as the
// evidence tests' second registry beside Debian's docker-registry 2.8 (which has
// none): HTTPS only (TLS 1.2+), Basic auth from an htpasswd file (bcrypt, as
// docker-registry reads it), blobs on disk. Manifests live in memory: a restart
// empties the registry. tests/cluster/registry.sh --kind referrers starts it.
//
//	registry --addr 127.0.0.1:PORT --cert CRT --key KEY --htpasswd FILE --data DIR
package main

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"golang.org/x/crypto/bcrypt"
)

const realm = "lockstep-test-registry"

// basicAuth checks every request against htpasswd's bcrypt hashes; a pair that
// verified once is remembered by its sha256, so bcrypt runs once per client.
type basicAuth struct {
	hashes map[string][]byte
	mu     sync.Mutex
	good   map[[32]byte]bool
	next   http.Handler
}

func readHtpasswd(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hashes := map[string][]byte{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(hash, "$2") {
			return nil, fmt.Errorf("%s: only bcrypt entries (htpasswd -B) are supported", path)
		}
		hashes[user] = []byte(hash)
	}
	if len(hashes) == 0 {
		return nil, fmt.Errorf("%s: no user", path)
	}
	return hashes, s.Err()
}

func (a *basicAuth) allowed(user, pass string) bool {
	key := sha256.Sum256([]byte(user + "\x00" + pass))
	a.mu.Lock()
	ok := a.good[key]
	a.mu.Unlock()
	if ok {
		return true
	}
	hash, known := a.hashes[user]
	if !known || bcrypt.CompareHashAndPassword(hash, []byte(pass)) != nil {
		return false
	}
	a.mu.Lock()
	a.good[key] = true
	a.mu.Unlock()
	return true
}

func (a *basicAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if user, pass, ok := r.BasicAuth(); ok && a.allowed(user, pass) {
		a.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", realm))
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:5000", "address to listen on")
	cert := flag.String("cert", "", "TLS certificate (PEM)")
	key := flag.String("key", "", "TLS private key (PEM)")
	htpasswd := flag.String("htpasswd", "", "htpasswd file with bcrypt entries")
	data := flag.String("data", "", "directory for blobs (default: in memory)")
	quiet := flag.Bool("quiet", false, "do not log every request")
	flag.Parse()
	if *cert == "" || *key == "" || *htpasswd == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: registry --addr HOST:PORT --cert CRT --key KEY --htpasswd FILE [--data DIR] [--quiet]")
		os.Exit(2)
	}
	hashes, err := readHtpasswd(*htpasswd)
	if err != nil {
		log.Fatal(err)
	}
	logger := log.New(os.Stderr, "", log.LstdFlags)
	if *quiet {
		logger.SetOutput(io.Discard)
	}
	opts := []registry.Option{registry.WithReferrersSupport(true), registry.Logger(logger)}
	if *data != "" {
		if err := os.MkdirAll(*data, 0o700); err != nil {
			log.Fatal(err)
		}
		opts = append(opts, registry.WithBlobHandler(registry.NewDiskBlobHandler(*data)))
	}
	srv := &http.Server{
		Addr:              *addr,
		Handler:           &basicAuth{hashes: hashes, good: map[[32]byte]bool{}, next: registry.New(opts...)},
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Printf("registry (go-containerregistry pkg/registry, referrers API) on https://%s", *addr)
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
