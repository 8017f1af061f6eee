// Package callstats is the report of a run of calls: what the sample
// consumer (samples/internal/load) measures per interval and in total and
// prints as JSON lines, and what the demo and the integration tests (it/)
// read back, with this same type.
package callstats

import (
	"maps"
	"slices"
	"time"
)

// Stats are the measurements of an interval or of a whole run.
type Stats struct {
	// Interval is true for a per-interval report.
	Interval bool `json:"interval"`
	// At is the end of the period, in seconds since the run started.
	At float64 `json:"at"`
	// Time is the end of the period on the wall clock, for readers that
	// line the period up with other events (a provider's start, a change
	// in the registry) without depending on when they read the report.
	Time time.Time `json:"time"`
	// Seconds is the length of the period.
	Seconds float64 `json:"seconds"`
	// Calls and Errors count the calls that ended in the period.
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	// QPS is Calls per second.
	QPS float64 `json:"qps"`
	// By counts successful calls per answering provider.
	By map[string]int64 `json:"by"`
	// Share is By in percent of the successful calls.
	Share map[string]float64 `json:"share"`
	// MeanMs is the mean latency of the successful calls per answering
	// provider, in ms, as this consumer measured it (the providers'
	// configured latencies plus whatever the machine adds).
	MeanMs map[string]float64 `json:"mean_ms"`
	// P50Ms, P90Ms and P99Ms are latency quantiles of all calls, in ms.
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	// LastError is the text of an error of the period, if any.
	LastError string `json:"last_error,omitempty"`
	// Load is the utilization each provider (host:port) last reported to
	// this consumer, in [0, 1], for providers that answered load reports
	// (set by the sample consumer; see package providerload).
	Load map[string]float64 `json:"load,omitempty"`
	// JavaLoad is Dubbo Java's load each provider last reported (its
	// machine's load average × 100 / CPUs; Java providers and Go providers
	// with the lbload filter send it), set as Load is.
	JavaLoad map[string]float64 `json:"java_load,omitempty"`
	// Keys maps each key to the calls per provider that answered it
	// (Config.TrackKeys, whole run only).
	Keys map[string]map[string]int64 `json:"keys,omitempty"`
}

// Providers returns the provider names of s, sorted.
func (s *Stats) Providers() []string {
	return slices.Sorted(maps.Keys(s.By))
}
