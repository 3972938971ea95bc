// loadgen: open-loop load at a fixed rate over keep-alive TLS, for latency
// at a given arrival rate (wrk measures closed-loop throughput; wrk2 is not
// in Debian). Each request is due at start + i/rate; its latency counts from
// that due time, so a stalled server is charged for the queue it causes
// (no coordinated omission). Prints one JSON object.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"lockstep.dev/bench/peers/stats"
)

func main() {
	url := flag.String("url", "", "https URL to POST to")
	bodyFile := flag.String("body", "", "request body file")
	caFile := flag.String("ca", "", "CA certificate to trust (PEM)")
	rate := flag.Int("rate", 2000, "requests per second")
	duration := flag.Duration("duration", 10*time.Second, "how long to send")
	conns := flag.Int("conns", 16, "keep-alive connections (and in-flight requests) at most")
	threads := flag.Int("threads", 1, "GOMAXPROCS of the load generator")
	flag.Parse()
	runtime.GOMAXPROCS(*threads)
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		log.Fatalf("--body: %v", err)
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		log.Fatalf("--ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		log.Fatalf("--ca %s: no certificate", *caFile)
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxConnsPerHost:     *conns,
		MaxIdleConnsPerHost: *conns,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 like the API server's webhook client with keep-alive
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	total := int(float64(*rate) * duration.Seconds())
	due := make(chan time.Time, total)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, total)
	errs, dropped := 0, 0
	// A server slower than the rate would keep the run going for as long as
	// its backlog lasts: requests still unsent a second past the end are
	// dropped and reported (they count as errors in docs/benchmarks.md).
	var giveUp time.Time
	var wg sync.WaitGroup
	for w := 0; w < *conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range due {
				if time.Now().After(giveUp) {
					mu.Lock()
					dropped++
					mu.Unlock()
					continue
				}
				resp, err := client.Post(*url, "application/json", bytes.NewReader(body))
				ok := err == nil
				if ok {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok = resp.StatusCode == 200
				}
				d := time.Since(t)
				mu.Lock()
				if ok {
					lat = append(lat, d)
				} else {
					errs++
				}
				mu.Unlock()
			}
		}()
	}
	interval := time.Second / time.Duration(*rate)
	start := time.Now()
	giveUp = start.Add(*duration + time.Second)
	for i := 0; i < total; i++ {
		t := start.Add(time.Duration(i) * interval)
		if d := time.Until(t); d > 0 {
			time.Sleep(d)
		}
		due <- t
	}
	close(due)
	wg.Wait()
	elapsed := time.Since(start)
	out := struct {
		Rate     int           `json:"rate"`
		Achieved float64       `json:"achieved_rps"`
		Errors   int           `json:"errors"`
		Dropped  int           `json:"dropped"`
		Latency  stats.Summary `json:"latency"`
	}{*rate, float64(len(lat)+errs) / elapsed.Seconds(), errs, dropped, stats.Summarize(lat)}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
