// Package stats summarises latency samples for the benchmark tools.
package stats

import (
	"sort"
	"time"
)

// Summary is what every tool prints, in milliseconds.
type Summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

// Summarize sorts samples in place (nearest-rank percentiles).
func Summarize(samples []time.Duration) Summary {
	s := Summary{Count: len(samples)}
	if len(samples) == 0 {
		return s
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	at := func(q float64) float64 {
		i := int(q*float64(len(samples))+0.999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(samples) {
			i = len(samples) - 1
		}
		return float64(samples[i].Microseconds()) / 1000
	}
	s.P50, s.P99, s.P999 = at(0.50), at(0.99), at(0.999)
	s.Max = float64(samples[len(samples)-1].Microseconds()) / 1000
	return s
}
