// Command osv-server is a small OSV-compatible HTTP endpoint for Lockstep's tests: the
// two calls of the OSV API v1 (https://google.github.io/osv.dev/api/) that Lockstep's
// client makes, over TLS 1.2+, from a directory of real OSV JSON records:
//
//	POST /v1/querybatch  {"queries":[{"package":{"name","ecosystem"},"version","page_token"}]}
//	                     -> {"results":[{"vulns":[{"id","modified"}],"next_page_token"}]}
//	GET  /v1/vulns/{id}  -> the record's file, as it is
//
// It is a test server, not osv.dev: a query matches a record when one of its
// affected[] entries names the package (ecosystem equal, PyPI names compared after
// PEP 503 normalisation) and lists the version in its `versions` array, or has no
// `versions` array at all (GitHub's records give only ranges). Ranges are not evaluated:
// such a record is returned for every version of its package, which is enough for a test
// server, and shows that the client decides itself (Lockstep evaluates every record it
// is given with its own matching; osv.dev would return fewer). A query without a
// version matches every record of the package. Results are cut into pages of
// --page-size ids, the next one named by next_page_token, as osv.dev pages large answers.
//
// It makes its own CA and a certificate for 127.0.0.1 and localhost at start, writes
// the CA to --ca-out and "https://127.0.0.1:PORT" to --url-out once it listens, logs
// one line per request on stderr, and stops on SIGTERM. Standard library only; built by
// tests/cluster/build-osv-server.sh.
//
//	osv-server --data DIR --ca-out FILE --url-out FILE [--addr 127.0.0.1:0] [--page-size N]
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

const maxQueries = 1000 // osv.dev's limit per querybatch

type affected struct {
	Package struct {
		Ecosystem string `json:"ecosystem"`
		Name      string `json:"name"`
	} `json:"package"`
	Versions []string `json:"versions"`
}

type record struct {
	ID       string     `json:"id"`
	Modified string     `json:"modified"`
	Affected []affected `json:"affected"`
	raw      []byte
}

var pep503 = regexp.MustCompile(`[-_.]+`)

func normalise(ecosystem, name string) string {
	if ecosystem == "PyPI" {
		return pep503.ReplaceAllString(strings.ToLower(name), "-")
	}
	return name
}

func load(dir string) (map[string]*record, error) {
	records := map[string]*record{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		r := &record{raw: raw}
		if err := json.Unmarshal(raw, r); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if r.ID == "" {
			return fmt.Errorf("%s: no id", path)
		}
		records[r.ID] = r
		return nil
	})
	if err == nil && len(records) == 0 {
		err = fmt.Errorf("%s: no OSV record", dir)
	}
	return records, err
}

type query struct {
	Package struct {
		Name      string `json:"name"`
		Ecosystem string `json:"ecosystem"`
	} `json:"package"`
	Version   string `json:"version"`
	PageToken string `json:"page_token"`
}

type vuln struct {
	ID       string `json:"id"`
	Modified string `json:"modified"`
}

type result struct {
	Vulns         []vuln `json:"vulns,omitempty"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

type server struct {
	records  map[string]*record
	ids      []string // sorted, so pages are stable
	pageSize int
}

func (s *server) matches(r *record, q query) bool {
	want := normalise(q.Package.Ecosystem, q.Package.Name)
	for _, a := range r.Affected {
		if a.Package.Ecosystem != q.Package.Ecosystem ||
			normalise(a.Package.Ecosystem, a.Package.Name) != want {
			continue
		}
		if q.Version == "" || len(a.Versions) == 0 {
			return true
		}
		for _, v := range a.Versions {
			if v == q.Version {
				return true
			}
		}
	}
	return false
}

func fail(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "message": fmt.Sprintf(format, args...)})
}

func (s *server) querybatch(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		fail(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	var body struct {
		Queries []query `json:"queries"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 8<<20)).Decode(&body); err != nil {
		fail(w, http.StatusBadRequest, "invalid JSON: %v", err)
		return
	}
	if len(body.Queries) > maxQueries {
		fail(w, http.StatusBadRequest, "too many queries: %d, at most %d", len(body.Queries), maxQueries)
		return
	}
	out := make([]result, len(body.Queries))
	for i, q := range body.Queries {
		if q.Package.Name == "" || q.Package.Ecosystem == "" {
			fail(w, http.StatusBadRequest, "queries[%d]: package name and ecosystem are required", i)
			return
		}
		start := 0
		if q.PageToken != "" {
			n, err := strconv.Atoi(q.PageToken)
			if err != nil || n < 0 {
				fail(w, http.StatusBadRequest, "queries[%d]: invalid page_token", i)
				return
			}
			start = n
		}
		seen := 0
		for _, id := range s.ids {
			r := s.records[id]
			if !s.matches(r, q) {
				continue
			}
			if seen >= start && len(out[i].Vulns) < s.pageSize {
				out[i].Vulns = append(out[i].Vulns, vuln{r.ID, r.Modified})
			} else if seen >= start {
				out[i].NextPageToken = strconv.Itoa(seen)
				break
			}
			seen++
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"results": out})
}

func (s *server) vulns(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		fail(w, http.StatusMethodNotAllowed, "GET only")
		return
	}
	r, ok := s.records[strings.TrimPrefix(req.URL.Path, "/v1/vulns/")]
	if !ok {
		fail(w, http.StatusNotFound, "Bug not found.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(r.raw)
}

// certificate makes a CA and a serving certificate for 127.0.0.1 and localhost.
func certificate(caOut string) (tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockstep test OSV CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDer, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	caPem := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDer})
	if err := os.WriteFile(caOut, caPem, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, caDer}, PrivateKey: key}, nil
}

func main() {
	data := flag.String("data", "", "directory of OSV JSON records (searched recursively)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	caOut := flag.String("ca-out", "", "where to write the CA certificate (PEM)")
	urlOut := flag.String("url-out", "", "where to write the URL once listening")
	pageSize := flag.Int("page-size", 1000, "ids per result page")
	flag.Parse()
	if *data == "" || *caOut == "" || *urlOut == "" || *pageSize < 1 {
		log.Fatal("osv-server: --data, --ca-out and --url-out are required; --page-size >= 1")
	}
	records, err := load(*data)
	if err != nil {
		log.Fatalf("osv-server: %v", err)
	}
	s := &server{records: records, pageSize: *pageSize}
	for id := range records {
		s.ids = append(s.ids, id)
	}
	sort.Strings(s.ids)
	cert, err := certificate(*caOut)
	if err != nil {
		log.Fatalf("osv-server: certificate: %v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("osv-server: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/querybatch", s.querybatch)
	mux.HandleFunc("/v1/vulns/", s.vulns)
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Printf("osv-server: %s %s", r.Method, r.URL.Path)
		mux.ServeHTTP(w, r)
	})
	srv := &http.Server{
		Handler:           logged,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	url := "https://" + ln.Addr().String()
	if err := os.WriteFile(*urlOut, []byte(url+"\n"), 0o644); err != nil {
		log.Fatalf("osv-server: %v", err)
	}
	log.Printf("osv-server: %d records from %s on %s", len(records), *data, url)
	log.Fatal(srv.ServeTLS(ln, "", ""))
}
