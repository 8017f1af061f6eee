// Package describe is what the balancers of this module decide, as Go
// values and as JSON, like brpc's Describe: for every balancer and every
// (service, method) it serves, each provider with its effective weight,
// its share of the recent picks, its calls in flight, failures, latency
// and state. The metrics (package lbmetrics) and the live page (Handler)
// are built on it.
//
// Balancers are Sources; package extension registers the module's six
// with Default. Reading a snapshot is off the hot path: it allocates and
// takes locks that Select never takes. Reasoning: DESIGN.md beside this
// file.
package describe

import (
	"math"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// State is what a balancer can say of a provider, in this order of
// precedence: a provider that is both unavailable and warming up is
// unavailable.
type State string

const (
	// StateUnavailable: dubbo-go marks the provider unavailable (its
	// connection is down); the cluster skips it.
	StateUnavailable State = "unavailable"
	// StateEjected: outlier ejection keeps the provider out for now.
	StateEjected State = "ejected"
	// StateDrained: the provider's weight is 0, so it gets calls only
	// when every provider is drained.
	StateDrained State = "drained"
	// StateWarming: the provider warms up; its warm weight is below its
	// full weight.
	StateWarming State = "warming"
	// StateOK: none of the above.
	StateOK State = "ok"
)

// Zones is how zone-aware routing splits a method's calls (package
// zone of the skeleton).
type Zones struct {
	// Local is the consumer's zone.
	Local string `json:"local"`
	// Mode is "direct" (every call stays in the local zone), "spill" (the
	// local zone keeps LocalShare of the calls, the rest spills by the
	// other zones' spare capacity) or "off" (zones ignored: too few
	// providers, no provider in the local zone, or ejection's panic mode).
	Mode string `json:"mode"`
	// LocalShare is the share of the calls the plan keeps in the local
	// zone, in [0, 1] (1 when Mode is direct, 0 when off).
	LocalShare float64 `json:"local_share"`
}

// Provider is one provider of a (service, method) as its balancer sees
// it.
type Provider struct {
	// Address is the provider's host:port.
	Address string `json:"provider"`
	// Zone is the provider's zone (its lb.zone parameter or Nacos
	// cluster), "" when it has none.
	Zone string `json:"zone,omitempty"`
	// State is the provider's state (see State).
	State State `json:"state"`
	// Weight is the balancer's effective weight of the provider: the warm
	// weight for warmrandom, fewestactive, swrr and rtadaptive, LALB's
	// weight for lalb, the percentage of the hash ring the provider owns
	// for ringhash.
	Weight float64 `json:"weight"`
	// CostMs is the cost the balancer compares, lower picked: rtadaptive's
	// charged RTT × (calls in flight + 1), in ms; loadaware's, the same
	// divided by the provider's concurrency capacity (see its DESIGN.md);
	// 0 for the other balancers.
	CostMs float64 `json:"cost_ms,omitempty"`
	// Share is the provider's share of the (service, method)'s picks in
	// the last Method.ShareSeconds, in [0, 1].
	Share float64 `json:"share"`
	// Picks is how many times the balancer picked the provider, failover
	// retries included, since the provider appeared.
	Picks int64 `json:"picks"`
	// InFlight is the number of calls in flight to the provider for the
	// method (as the lbactive filter counts them).
	InFlight int64 `json:"in_flight"`
	// Calls and Failures count the finished calls and the failed ones.
	Calls    int64 `json:"calls"`
	Failures int64 `json:"failures"`
	// LatencyMs is the peak EWMA of the provider's latency, in ms (0
	// before its first call ends).
	LatencyMs float64 `json:"latency_ms"`
	// Ejections is how many times outlier ejection ejected the provider
	// for the method.
	Ejections int64 `json:"ejections"`
	// Reported is the load the provider last reported to this consumer
	// (package loadreport), nil if it never did.
	Reported *Reported `json:"reported,omitempty"`

	// URL is the provider's URL, for labels; Stats its statistics for
	// the method, for the latency histogram.
	URL   *common.URL      `json:"-"`
	Stats *rpcstatus.Stats `json:"-"`
}

// Reported is a provider's last load report, as the consumer received it.
type Reported struct {
	// AgeSeconds is how long ago it was received.
	AgeSeconds float64 `json:"age_s"`
	// Utilization is what the balancers read from it, in [0, 1]: the CPU
	// utilization, or calls in flight over capacity if higher (see
	// rpcstatus.Load.Utilization); nil for a report without them (a Dubbo
	// Java provider's).
	Utilization *float64 `json:"utilization,omitempty"`
	// CPU, InFlight, Capacity, QPS and EPS are the provider's own fields
	// (0 when absent).
	CPU      float64 `json:"cpu,omitempty"`
	InFlight float64 `json:"in_flight,omitempty"`
	Capacity float64 `json:"capacity,omitempty"`
	QPS      float64 `json:"qps,omitempty"`
	EPS      float64 `json:"eps,omitempty"`
	// JavaLoad is Dubbo Java's load, the machine's load average × 100 /
	// CPUs, in percent; nil when the report had none.
	JavaLoad *float64 `json:"java_load,omitempty"`
}

// Method is what a balancer knows of one (service, method).
type Method struct {
	// Service is the service key (group/interface:version); Interface,
	// Group and Version are its parts, Method the method.
	Service   string `json:"service"`
	Interface string `json:"interface"`
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Method    string `json:"method"`
	// ShareSeconds is the time the providers' shares cover: up to the
	// Registry's window, or 0 when they cover every pick since the
	// providers appeared (the first snapshot of the Registry).
	ShareSeconds float64 `json:"share_seconds"`
	// Panic is true while outlier ejection is in panic mode: it would
	// eject so many providers that fewer than its panic threshold would be
	// left, so it ejects none and every provider serves.
	Panic bool `json:"panic,omitempty"`
	// Zones is the zone-aware routing of the method; nil when the
	// consumer names no zone.
	Zones *Zones `json:"zones,omitempty"`
	// Providers are the providers of the balancer's current snapshot, in
	// the order dubbo-go passed them; providers that left are not there.
	// In a Snapshot bounded by Bound (lb.json), only some of them, and
	// Summary says so.
	Providers []Provider `json:"providers"`
	// Summary sums every provider of the method when Providers lists
	// only some (Bound); nil when it lists all.
	Summary *Summary `json:"summary,omitempty"`
}

// Rebuilds counts the snapshots a balancer built: for a change of
// membership (the first of each (service, method) included), and to
// refresh the warm weights of warming providers; and the picks it made
// while the snapshot of a new membership was built off the call path
// (InterimPicks), by a rule that only approximates its own (see the
// balancer's documentation).
type Rebuilds struct {
	Membership   int64 `json:"membership"`
	Warmup       int64 `json:"warmup"`
	InterimPicks int64 `json:"interim_picks"`
}

// Balancer is what one balancer knows.
type Balancer struct {
	// Name is the name the balancer is registered under.
	Name     string   `json:"name"`
	Rebuilds Rebuilds `json:"rebuilds"`
	// Methods are the (service, method)s it serves, by service and
	// method.
	Methods []Method `json:"methods"`
}

// Snapshot is what every registered balancer knows at one time.
type Snapshot struct {
	// Time is when it was taken.
	Time time.Time `json:"time"`
	// Balancers are in the order they were registered.
	Balancers []Balancer `json:"balancers"`
	// Subsets are the subsets the consumer's references hold
	// (lb.subset.size), by service; none while subsetting is off.
	Subsets []Subset `json:"subsets,omitempty"`
}

// Subset modes (Subset.Mode).
const (
	// SubsetAperture: the consumer found its position among the
	// consumers that the registry lists (deterministic aperture).
	SubsetAperture = "aperture"
	// SubsetRendezvous: rendezvous hashing seeded with the consumer's ID.
	SubsetRendezvous = "rendezvous"
)

// MaxSubsetMembers bounds Subset.Members.
const MaxSubsetMembers = 64

// Subset is the subset of the providers of a service that one reference
// holds: the providers it refers to and connects to, and all that its
// balancers, statistics, ejection and metrics see.
type Subset struct {
	// Service is the reference's service key (group/interface:version).
	Service string `json:"service"`
	// Registry says where the subset is drawn: "interface" or
	// "application" level.
	Registry string `json:"registry"`
	// Mode is SubsetAperture or SubsetRendezvous.
	Mode string `json:"mode"`
	// Index and Count are the consumer's position among Count consumers
	// (aperture); 0 and 0 under rendezvous.
	Index int `json:"index"`
	Count int `json:"count"`
	// Size is the configured number of serving providers (lb.subset.size).
	Size int `json:"size"`
	// Held is the number of providers held, Serving those of them that
	// serve (not ejected, healthy), Total the number in the full set.
	Held    int `json:"held"`
	Serving int `json:"serving"`
	Total   int `json:"total"`
	// Members are the addresses held, sorted, at most MaxSubsetMembers.
	Members []string `json:"members"`
}

// Source is a balancer that can describe itself. Every balancer of the
// module is one. Its methods may be called by several Snapshots at once,
// with no lock of the Registry held.
type Source interface {
	// Describe returns every (service, method) the balancer serves, its
	// figures read at now (rpcstatus.Nanotime's clock); Share and
	// ShareSeconds are left for the Registry to fill.
	Describe(now int64) []Method
	// Rebuilds returns the balancer's snapshot rebuilds.
	Rebuilds() Rebuilds
}

// finite returns f, or in its place 0 for NaN and ±math.MaxFloat64 for
// ±Inf: every float of a Snapshot is finite, which JSON requires.
func finite(f float64) float64 {
	switch {
	case algo.Finite(f):
		return f
	case math.IsInf(f, 1):
		return math.MaxFloat64
	case math.IsInf(f, -1):
		return -math.MaxFloat64
	}
	return 0
}

// finiteMethod makes every float of m finite (see finite); what m points
// to is copied, not changed, as a Source may share it.
func finiteMethod(m *Method) {
	m.ShareSeconds = finite(m.ShareSeconds)
	if m.Zones != nil {
		z := *m.Zones
		z.LocalShare = finite(z.LocalShare)
		m.Zones = &z
	}
	for i := range m.Providers {
		p := &m.Providers[i]
		p.Weight, p.CostMs, p.Share, p.LatencyMs = finite(p.Weight), finite(p.CostMs), finite(p.Share), finite(p.LatencyMs)
		if p.Reported != nil {
			r := *p.Reported
			r.AgeSeconds, r.CPU, r.InFlight, r.Capacity, r.QPS, r.EPS =
				finite(r.AgeSeconds), finite(r.CPU), finite(r.InFlight), finite(r.Capacity), finite(r.QPS), finite(r.EPS)
			r.Utilization, r.JavaLoad = finitePtr(r.Utilization), finitePtr(r.JavaLoad)
			p.Reported = &r
		}
	}
}

// finitePtr returns f, or a pointer to finite(*f) when *f is not finite.
func finitePtr(f *float64) *float64 {
	if f == nil || algo.Finite(*f) {
		return f
	}
	v := finite(*f)
	return &v
}
