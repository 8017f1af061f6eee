// Package load drives a closed-loop load against the greeter service and
// measures it: every worker sends a call, waits for the answer, and sends
// the next. It counts calls per answering provider, errors and latency,
// per interval and in total. The sample consumer, the demo and the
// integration tests use it.
package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbogo-lb/lb/internal/callstats"
	"github.com/dubbogo-lb/lb/samples/internal/greeter"
)

// Config is what load to drive. Zero fields take the documented defaults.
type Config struct {
	// Concurrency is the number of workers, each with one call in flight;
	// default 8.
	Concurrency int
	// Duration bounds the run; default 10s unless Calls is set.
	Duration time.Duration
	// Calls, if positive, stops the run after that many calls.
	Calls int64
	// Interval is how often OnInterval is called; default 1s.
	Interval time.Duration
	// Keys is the number of distinct request keys, "key-0" … , sent in
	// turn; default 1000.
	Keys int
	// TrackKeys records which providers answered each key (for
	// consistent hashing checks).
	TrackKeys bool
	// Timeout bounds each call; default 3s.
	Timeout time.Duration
	// Rate, if positive, is the most calls the workers start per second
	// together, one every 1/Rate; a worker that falls behind does not make
	// up for it later. Default 0: every worker sends its next call as soon
	// as the last one is answered.
	Rate float64
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.Duration <= 0 && c.Calls <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.Keys <= 0 {
		c.Keys = 1000
	}
	if c.Timeout <= 0 {
		c.Timeout = 3 * time.Second
	}
	return c
}

// run is the shared state of one Run.
type run struct {
	cfg      Config
	g        greeter.Greeter
	started  time.Time
	calls    atomic.Int64
	errors   atomic.Int64
	hist     Hist
	mu       sync.Mutex // guards by, keys, lastErr
	by       map[string]*counter
	keys     map[string]map[string]int64
	lastErr  string
	firstErr string
	reqs     []string
	issued   atomic.Int64
	stopping atomic.Bool
	// pace ticks once per call the workers may start, when Config.Rate
	// is set; nil otherwise.
	pace <-chan time.Time
}

// Run drives the load until the duration or the call count is reached or
// ctx is done, calling onInterval (if not nil) after every interval from
// one goroutine, and returns the totals.
func Run(ctx context.Context, g greeter.Greeter, cfg Config, onInterval func(callstats.Stats)) (callstats.Stats, error) {
	if g == nil {
		return callstats.Stats{}, errors.New("load: nil greeter")
	}
	cfg = cfg.withDefaults()
	r := &run{cfg: cfg, g: g, by: map[string]*counter{}, reqs: make([]string, cfg.Keys)}
	if cfg.TrackKeys {
		r.keys = map[string]map[string]int64{}
	}
	for i := range r.reqs {
		r.reqs[i] = "key-" + strconv.Itoa(i)
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	if cfg.Rate > 0 {
		// A ticker drops the ticks no worker waits for: no burst after a
		// stall.
		pace := time.NewTicker(max(time.Duration(float64(time.Second)/cfg.Rate), time.Microsecond))
		defer pace.Stop()
		r.pace = pace.C
	}
	r.started = time.Now()
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			r.work(ctx)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	prev, prevAt := r.snapshot(), r.started
	for {
		select {
		case <-done:
			total := r.snapshot().stats(&snap{hist: new(Snapshot)}, r.started, time.Now(), r.started)
			r.mu.Lock()
			total.Keys = r.keys
			if total.Errors > 0 {
				total.LastError = r.firstErr
			}
			r.mu.Unlock()
			return total, nil
		case now := <-tick.C:
			cur := r.snapshot()
			if onInterval != nil {
				s := cur.stats(prev, prevAt, now, r.started)
				s.Interval = true
				onInterval(s)
			}
			prev, prevAt = cur, now
		}
	}
}

func (r *run) work(ctx context.Context) {
	for ctx.Err() == nil {
		if r.pace != nil {
			select {
			case <-r.pace:
			case <-ctx.Done():
				return
			}
		}
		n := r.issued.Add(1)
		if r.cfg.Calls > 0 && n > r.cfg.Calls {
			return
		}
		key := r.reqs[int((n-1)%int64(len(r.reqs)))]
		// A call in flight when the run ends is let finish: cancelling it
		// would count (and make dubbo-go log) an error that is not one.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Timeout)
		start := time.Now()
		resp, err := r.g.Hello(cctx, wrapperspb.String(key))
		elapsed := time.Since(start)
		cancel()
		r.hist.Record(elapsed)
		r.calls.Add(1)
		if err != nil {
			r.errors.Add(1)
			r.mu.Lock()
			r.lastErr = err.Error()
			if r.firstErr == "" {
				r.firstErr = r.lastErr
			}
			r.mu.Unlock()
			continue
		}
		r.count(resp.GetValue(), key, elapsed)
	}
}

// counter counts one provider's successful calls and their latencies.
type counter struct {
	calls, nanos atomic.Int64
}

func (r *run) count(provider, key string, elapsed time.Duration) {
	r.mu.Lock()
	c := r.by[provider]
	if c == nil {
		c = new(counter)
		r.by[provider] = c
	}
	if r.keys != nil {
		m := r.keys[key]
		if m == nil {
			m = map[string]int64{}
			r.keys[key] = m
		}
		m[provider]++
	}
	r.mu.Unlock()
	// The latency first: a snapshot that sees the call sees its latency.
	c.nanos.Add(int64(elapsed))
	c.calls.Add(1)
}

// snap is the cumulative state at one moment.
type snap struct {
	calls, errors int64
	by            map[string]int64
	nanos         map[string]int64 // latency sums per provider
	hist          *Snapshot
	lastErr       string
}

func (r *run) snapshot() *snap {
	s := &snap{calls: r.calls.Load(), errors: r.errors.Load(), by: map[string]int64{}, nanos: map[string]int64{}, hist: r.hist.Snapshot()}
	r.mu.Lock()
	for name, c := range r.by {
		// Calls first: a call counted between the two loads adds latency
		// without a call, never a call without its latency.
		s.by[name] = c.calls.Load()
		s.nanos[name] = c.nanos.Load()
	}
	s.lastErr = r.lastErr
	r.lastErr = ""
	r.mu.Unlock()
	return s
}

// stats returns the measurements between prev (at from) and s (at to).
func (s *snap) stats(prev *snap, from, to, started time.Time) callstats.Stats {
	secs := to.Sub(from).Seconds()
	h := s.hist.Sub(prev.hist)
	out := callstats.Stats{
		At:        to.Sub(started).Seconds(),
		Time:      to,
		Seconds:   secs,
		Calls:     s.calls - prev.calls,
		Errors:    s.errors - prev.errors,
		By:        map[string]int64{},
		Share:     map[string]float64{},
		MeanMs:    map[string]float64{},
		P50Ms:     ms(h.Quantile(0.50)),
		P90Ms:     ms(h.Quantile(0.90)),
		P99Ms:     ms(h.Quantile(0.99)),
		LastError: s.lastErr,
	}
	if secs > 0 {
		out.QPS = float64(out.Calls) / secs
	}
	var ok int64
	for name, n := range s.by {
		d := n - prev.by[name]
		out.By[name] = d
		ok += d
		if d > 0 {
			out.MeanMs[name] = float64(s.nanos[name]-prev.nanos[name]) / float64(d) / 1e6
		}
	}
	for name, d := range out.By {
		if ok > 0 {
			out.Share[name] = 100 * float64(d) / float64(ok)
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WaitProviders calls g, each call bounded by callTimeout (a provider's
// service time and more, or the slowest never answers in time), until n
// distinct providers have answered or timeout passes, and returns their
// names. Calls that fail (no provider known yet) are retried after a
// short pause.
func WaitProviders(ctx context.Context, g greeter.Greeter, n int, timeout, callTimeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	seen := map[string]bool{}
	var lastErr error
	for i := 0; len(seen) < n && ctx.Err() == nil; i++ {
		cctx, ccancel := context.WithTimeout(ctx, callTimeout)
		resp, err := g.Hello(cctx, wrapperspb.String("ready-"+strconv.Itoa(i)))
		ccancel()
		if err == nil {
			seen[resp.GetValue()] = true
			continue
		}
		lastErr = err
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	names := slices.Sorted(maps.Keys(seen))
	if len(seen) < n {
		err := fmt.Errorf("only %d of %d providers answered within %v %v", len(seen), n, timeout, names)
		if lastErr != nil {
			err = fmt.Errorf("%w; last error: %w", err, lastErr)
		}
		return names, err
	}
	return names, nil
}
