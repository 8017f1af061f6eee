// Package describe is what the balancers of this module decide, as Go
// values and as JSON, like brpc's Describe: for every balancer and every
// (service, method) it serves, each provider with its effective weight,
// its share of the recent picks, its calls in flight, failures, latency
// and state. The metrics (package lbmetrics) and the live page (Handler)
// are built on it.
//
// Balancers are Sources; package extension registers the module's with
// Default. Reading a snapshot is off the hot path: it allocates and takes
// locks that Select never takes. Reasoning: DESIGN.md.
package describe

import (
	"math"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// State is what a balancer can say of a provider, the first that holds
// in the order of the constants.
type State string

const (
	StateUnavailable State = "unavailable" // dubbo-go marks it unavailable (its connection is down)
	StateEjected     State = "ejected"     // outlier ejection keeps it out for now
	StateDrained     State = "drained"     // weight 0: calls only when every provider is drained
	StateWarming     State = "warming"     // its warm weight is below its full weight
	StateOK          State = "ok"          // none of the above
)

// Zones is how zone-aware routing splits a method's calls.
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
	// weight, or what the balancer weighs by instead (lalb's weight,
	// loadaware's reported weight or capacity, for ringhash the
	// percentage of the ring the provider owns).
	Weight float64 `json:"weight"`
	// CostMs is the cost the balancer compares, lower picked, in ms (see
	// the balancer's documentation); 0 for a balancer without one.
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
	// LatencyMs is the peak EWMA of its latency, in ms (0 before a call).
	LatencyMs float64 `json:"latency_ms"`
	// Ejections counts the times outlier ejection ejected it.
	Ejections int64 `json:"ejections"`
	// Reported is the load it last reported to this consumer (package
	// loadreport), nil if it never did.
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
	// Utilization is what the balancers read from it, in [0, 1]
	// (rpcstatus.Load.Utilization); nil for a report without it (a Dubbo
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
	// ShareSeconds is the time the providers' shares cover, about the
	// Registry's window; 0 when they cover every pick so far.
	ShareSeconds float64 `json:"share_seconds"`
	// Panic is true while outlier ejection is in panic mode (it would
	// leave fewer providers than its panic threshold): every provider
	// serves.
	Panic bool `json:"panic,omitempty"`
	// Zones is the zone-aware routing of the method; nil when the
	// consumer names no zone.
	Zones *Zones `json:"zones,omitempty"`
	// Providers are the providers of the balancer's current snapshot, in
	// the order dubbo-go passed them, without those that left; after
	// Bound, only some of them.
	Providers []Provider `json:"providers"`
	// Summary sums every provider of the method when Providers lists
	// only some (Bound); nil when it lists all.
	Summary *Summary `json:"summary,omitempty"`
}

// Rebuilds counts the snapshots a balancer built, for a change of
// membership (the first included) and to refresh warm weights, and the
// picks it made by its interim rule while the snapshot of a new
// membership was built off the call path.
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
	SubsetAperture   = "aperture"   // the consumer's position among those the registry lists
	SubsetRendezvous = "rendezvous" // rendezvous hashing seeded with the consumer's ID
)

// MaxSubsetMembers bounds Subset.Members.
const MaxSubsetMembers = 64

// Subset is the subset of the providers of a service that one reference
// holds (refers to, connects to), all that its balancers see.
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
	// Held counts the providers held, Serving those of them neither
	// ejected nor unhealthy, Total those of the full set.
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

// finiteMethod makes every float of m finite, copying what m points to,
// which a Source may share.
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
