package rpcstatus

import (
	"math"
	"sync/atomic"

	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// Load is the last load report a provider sent this consumer (package
// loadreport), as the lbactive filter received it, and when. Each field is
// an atomic word: a reader racing a writer may see fields of two
// successive reports, both recent. The zero value holds no report. All
// methods are safe for concurrent use and allocate nothing.
type Load struct {
	at       atomic.Int64 // Nanotime when received; 0: never
	has      atomic.Uint32
	timeMs   atomic.Int64
	javaLoad atomic.Uint64 // float64 bits, as every float below
	cpu      atomic.Uint64
	inflight atomic.Uint64
	capacity atomic.Uint64
	qps      atomic.Uint64
	eps      atomic.Uint64
	reports  atomic.Int64
}

// Load returns the provider's last load report.
func (p *Provider) Load() *Load { return &p.load }

// Store records r, received at now (ns). A report whose provider time is
// older than the one held is dropped, as Dubbo Java's AdaptiveMetrics
// does; so is a report without any field.
func (l *Load) Store(now int64, r *loadreport.Report) {
	if r.Has == 0 {
		return
	}
	if r.Has&loadreport.HasTime != 0 && r.TimeMs < l.timeMs.Load() {
		return
	}
	l.has.Store(uint32(r.Has))
	l.timeMs.Store(r.TimeMs)
	l.javaLoad.Store(math.Float64bits(r.JavaLoad))
	l.cpu.Store(math.Float64bits(r.CPU))
	l.inflight.Store(math.Float64bits(r.Inflight))
	l.capacity.Store(math.Float64bits(r.Capacity))
	l.qps.Store(math.Float64bits(r.QPS))
	l.eps.Store(math.Float64bits(r.EPS))
	l.at.Store(max(now, 1))
	l.reports.Add(1)
}

// At returns when the last report was received (ns), 0 if none was.
func (l *Load) At() int64 { return l.at.Load() }

// Reports returns how many reports were stored.
func (l *Load) Reports() int64 { return l.reports.Load() }

// Report returns the last report (its Has is 0 if there was none).
func (l *Load) Report() loadreport.Report {
	return loadreport.Report{
		Has:      loadreport.Field(l.has.Load()),
		TimeMs:   l.timeMs.Load(),
		JavaLoad: math.Float64frombits(l.javaLoad.Load()),
		CPU:      math.Float64frombits(l.cpu.Load()),
		Inflight: math.Float64frombits(l.inflight.Load()),
		Capacity: math.Float64frombits(l.capacity.Load()),
		QPS:      math.Float64frombits(l.qps.Load()),
		EPS:      math.Float64frombits(l.eps.Load()),
	}
}

// Utilization returns the provider's utilization in [0, 1] by its last
// report: its CPU utilization, or, when it reports a capacity, the larger
// of that and its calls in flight over its capacity. ok is false when the
// report has none of these fields, as a Dubbo Java provider's, whose load
// (JavaLoad) is the machine's: it is not the provider's utilization
// (loadbalance/loadaware/DESIGN.md).
func (l *Load) Utilization() (u float64, ok bool) {
	has := loadreport.Field(l.has.Load())
	if has&loadreport.HasCPU != 0 {
		u, ok = math.Float64frombits(l.cpu.Load()), true
	}
	if has&(loadreport.HasCapacity|loadreport.HasInflight) == loadreport.HasCapacity|loadreport.HasInflight {
		if c := math.Float64frombits(l.capacity.Load()); c > 0 {
			u, ok = max(u, min(math.Float64frombits(l.inflight.Load())/c, 1)), true
		}
	}
	return u, ok
}

// JavaLoad returns Dubbo Java's load of the last report (the machine's
// 1-minute load average × 100 / CPUs, in percent, above 100 when the
// machine is oversubscribed), and whether it had one. Java providers and
// Go providers with the lbload filter send it.
func (l *Load) JavaLoad() (load float64, ok bool) {
	if loadreport.Field(l.has.Load())&loadreport.HasJavaLoad == 0 {
		return 0, false
	}
	return math.Float64frombits(l.javaLoad.Load()), true
}

// Rates returns the calls and failed calls per second of the last report,
// and whether it had them.
func (l *Load) Rates() (qps, eps float64, ok bool) {
	has := loadreport.Field(l.has.Load())
	if has&loadreport.HasQPS == 0 {
		return 0, 0, false
	}
	return math.Float64frombits(l.qps.Load()), math.Float64frombits(l.eps.Load()), true
}
