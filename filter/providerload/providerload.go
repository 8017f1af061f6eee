// Package providerload is the provider filter that answers calls with the
// provider's load, for balancers that weigh providers by what they report
// (the loadaware balancer; Dubbo Java's adaptive one). Register it on a
// provider's filter chain (the extension package registers it as "lbload"):
//
//	dubbo:
//	  provider:
//	    filter: lbload
//
// A call that carries the request attachment loadreport.AskKey
// ("lb_adaptive", what Dubbo Java's adaptive consumers and this module's
// lbactive filter send) is answered with two result attachments (over
// triple, response trailers): Dubbo Java's "curTime:<ms>,load:<load
// average × 100 / CPUs>" under "lb_adaptive", and this module's fields
// under "lb-load": the process's CPU utilization, its calls in flight, its
// configured capacity, its calls and failures per second (package
// loadreport). A call that does not ask gets nothing more.
//
// The figures are sampled off the hot path: a Sampler goroutine reads the
// process CPU time, the load average and the filter's counters every
// Interval, smooths them and publishes the two attachment values, ready
// made, through one atomic pointer. A call adds to two atomic counters
// and, when asked, puts the two published values into its result: no lock,
// no allocation of ours.
package providerload

import (
	"context"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"

	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// Name is the name the filter is registered under with dubbo-go.
const Name = "lbload"

// capacityKey is the provider URL parameter (the service's params) that
// states the calls in flight the provider takes at most, which its reports
// carry; it overrides Options.Capacity. Absent, 0 or malformed: none.
const capacityKey = "lb.capacity"

// Options configure a Filter. The zero value is ready to use.
type Options struct {
	// Interval is how often the figures are sampled and the answers
	// rebuilt; default 100 ms. A report is at most this old.
	Interval time.Duration
	// Smoothing is the time constant of the moving averages of CPU
	// utilization, calls in flight and rates; default 1 s.
	Smoothing time.Duration
	// Capacity is the provider's capacity in calls in flight; 0: none
	// (see CapacityKey).
	Capacity int64
	// CPUs is the number of CPUs utilization is a share of; default
	// runtime.GOMAXPROCS(0) when the sampler starts.
	CPUs int
	// Now is the wall clock; default time.Now.
	Now func() time.Time
	// CPUTime returns the process's CPU time used so far (user + system),
	// and false where it cannot be read; default getrusage.
	CPUTime func() (time.Duration, bool)
	// LoadAverage returns the 1-minute load average of the machine, and
	// false where it has none; default /proc/loadavg.
	LoadAverage func() (float64, bool)
}

// Default is the filter the extension package registers, with default
// Options; a provider configures its capacity with CapacityKey or
// SetCapacity.
var Default = New(Options{})

// SetCapacity sets the capacity the reports carry (calls in flight); 0:
// none. CapacityKey on a provider URL overrides it.
func (f *Filter) SetCapacity(n int64) { f.baseCap.Store(max(n, 0)) }

// Filter is the provider filter. It is safe for concurrent use. Its
// sampler starts on the first call (or Start) and runs until Stop.
type Filter struct {
	opts     Options
	inflight atomic.Int64
	done     atomic.Int64
	failed   atomic.Int64
	answered atomic.Int64 // calls answered with a report
	capacity atomic.Int64 // from CapacityKey; 0: baseCap
	baseCap  atomic.Int64 // Options.Capacity, or SetCapacity's
	lastURL  atomic.Pointer[common.URL]
	answer   atomic.Pointer[answer]

	start sync.Once
	stop  chan struct{}
	state sampler
}

// answer is what a call that asks gets: the two attachment values, boxed
// once per sample so that a call stores them without allocating.
type answer struct {
	java, own any
	report    loadreport.Report
}

// New returns a Filter with opts; its sampler is not started yet.
func New(opts Options) *Filter {
	if opts.Interval <= 0 {
		opts.Interval = 100 * time.Millisecond
	}
	if opts.Smoothing <= 0 {
		opts.Smoothing = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CPUTime == nil {
		opts.CPUTime = processCPUTime
	}
	if opts.LoadAverage == nil {
		opts.LoadAverage = loadAverage
	}
	f := &Filter{opts: opts, stop: make(chan struct{})}
	f.baseCap.Store(max(opts.Capacity, 0))
	return f
}

// Invoke counts the call in flight, passes it on, and answers with the
// load when the call asks for it.
func (f *Filter) Invoke(ctx context.Context, invoker base.Invoker, inv base.Invocation) result.Result {
	f.start.Do(f.run)
	if u := invoker.GetURL(); u != nil && f.lastURL.Load() != u {
		f.seeURL(u)
	}
	f.inflight.Add(1)
	res := f.invoke(ctx, invoker, inv)
	f.inflight.Add(-1)
	f.done.Add(1)
	if res == nil || res.Error() != nil {
		f.failed.Add(1)
	}
	if res != nil && asks(inv) {
		if a := f.answer.Load(); a != nil {
			res.AddAttachment(loadreport.JavaKey, a.java)
			res.AddAttachment(loadreport.OwnKey, a.own)
			f.answered.Add(1)
		}
	}
	return res
}

// invoke calls the next invoker, ending the count even when it panics.
func (f *Filter) invoke(ctx context.Context, invoker base.Invoker, inv base.Invocation) (res result.Result) {
	defer func() {
		if res == nil {
			// A panic (re-raised after the count) or a nil result.
			if v := recover(); v != nil {
				f.inflight.Add(-1)
				f.done.Add(1)
				f.failed.Add(1)
				panic(v)
			}
		}
	}()
	return invoker.Invoke(ctx, inv)
}

// OnResponse returns res unchanged: Invoke did the work.
func (f *Filter) OnResponse(_ context.Context, res result.Result, _ base.Invoker, _ base.Invocation) result.Result {
	return res
}

// asks reports whether inv asks for a load report.
func asks(inv base.Invocation) bool {
	_, ok := inv.GetAttachment(loadreport.AskKey)
	return ok
}

// seeURL reads the capacity parameter of a provider URL not seen last.
func (f *Filter) seeURL(u *common.URL) {
	f.lastURL.Store(u)
	if c, err := strconv.ParseInt(u.GetParam(capacityKey, ""), 10, 64); err == nil && c > 0 && c <= 1e9 {
		f.capacity.Store(c)
	}
}

// Report returns the figures of the last sample (zero before the first).
func (f *Filter) Report() loadreport.Report {
	if a := f.answer.Load(); a != nil {
		return a.report
	}
	return loadreport.Report{}
}

// Answered returns how many calls were answered with a report so far:
// the calls that asked (Dubbo Java's adaptive consumers, this module's
// lbactive filter), once the first sample is taken.
func (f *Filter) Answered() int64 { return f.answered.Load() }

// Inflight returns the calls in flight now.
func (f *Filter) Inflight() int64 { return f.inflight.Load() }

// Start starts the sampler (once; calls start it too) after taking a
// first sample, so that the first call that asks is answered.
func (f *Filter) Start() { f.start.Do(f.run) }

func (f *Filter) run() {
	f.state.init(f)
	f.Sample()
	go f.loop()
}

// Stop stops the sampler.
func (f *Filter) Stop() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
}

func (f *Filter) loop() {
	t := time.NewTicker(f.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.Sample()
		}
	}
}

// sampler is the state of the moving averages, touched only by Sample.
type sampler struct {
	mu                       sync.Mutex // Sample may be called by tests beside the loop
	cpus                     float64
	at                       time.Time
	cpu                      time.Duration
	cpuOK                    bool
	done, failed             int64
	util, inflight, qps, eps float64
	primed                   bool
}

func (s *sampler) init(f *Filter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cpus = float64(f.opts.CPUs)
	if s.cpus <= 0 {
		s.cpus = float64(runtime.GOMAXPROCS(0))
	}
}

// Sample reads the figures now, folds them into the averages and publishes
// the answers. The sampler calls it every Interval; tests call it directly.
func (f *Filter) Sample() {
	s := &f.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cpus <= 0 {
		s.cpus = float64(max(f.opts.CPUs, 1))
	}
	now := f.opts.Now()
	cpu, cpuOK := f.opts.CPUTime()
	done, failed, inflight := f.done.Load(), f.failed.Load(), float64(f.inflight.Load())
	if !s.primed {
		s.primed = true
		s.inflight = inflight
	} else if dt := now.Sub(s.at); dt > 0 {
		w := math.Exp(-float64(dt) / float64(f.opts.Smoothing)) // weight of the past
		sec := dt.Seconds()
		if cpuOK && s.cpuOK {
			u := min(max(float64(cpu-s.cpu)/float64(dt)/s.cpus, 0), 1)
			s.util = w*s.util + (1-w)*u
		}
		s.inflight = w*s.inflight + (1-w)*inflight
		s.qps = w*s.qps + (1-w)*float64(done-s.done)/sec
		s.eps = w*s.eps + (1-w)*float64(failed-s.failed)/sec
	}
	s.at, s.cpu, s.cpuOK, s.done, s.failed = now, cpu, cpuOK, done, failed

	r := loadreport.Report{TimeMs: now.UnixMilli(), CPU: s.util, Inflight: s.inflight, QPS: s.qps, EPS: s.eps,
		Has: loadreport.HasTime | loadreport.HasInflight | loadreport.HasQPS | loadreport.HasEPS}
	if cpuOK {
		r.Has |= loadreport.HasCPU
	}
	if c := f.capacity.Load(); c > 0 {
		r.Capacity, r.Has = float64(c), r.Has|loadreport.HasCapacity
	} else if c := f.baseCap.Load(); c > 0 {
		r.Capacity, r.Has = float64(c), r.Has|loadreport.HasCapacity
	}
	// Java's load: the load average × 100 / CPUs, -1 × 100 / CPUs where
	// there is none (as OperatingSystemMXBean reports it).
	la, ok := f.opts.LoadAverage()
	if !ok {
		la = -1
	}
	r.JavaLoad = la * 100 / float64(runtime.NumCPU())
	if ok {
		r.Has |= loadreport.HasJavaLoad
	}
	var buf [160]byte
	a := &answer{report: r}
	a.java = string(loadreport.AppendJava(buf[:0], &r))
	a.own = string(loadreport.AppendOwn(buf[:0], &r))
	f.answer.Store(a)
}
