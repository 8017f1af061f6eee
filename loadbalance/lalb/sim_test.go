package lalb

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// A discrete-event simulation of callers, providers and the LALB core, on a
// virtual clock: no sleeps, fully deterministic for a given seed. It plays
// the part the adapter will play (window, in-flight sums, refreshing a
// provider's weight on feedback and when it is chosen).

const simWindow = 128 // brpc's window, as rpcstatus.WindowSize

// simServer decides how long a call started at now takes and whether it
// fails. slots > 0 models a server with that many workers and a FIFO queue
// (latency grows with load); slots == 0 means unlimited parallelism (a pure
// sleep, as in brpc's experiment).
type simServer struct {
	service func(now int64, rng *rand.Rand) (d int64, fail bool)
	slots   []int64 // time each worker becomes free
}

func (s *simServer) call(now int64, rng *rand.Rand) (end int64, fail bool) {
	d, fail := s.service(now, rng)
	if len(s.slots) == 0 {
		return now + d, fail
	}
	k := 0
	for i, t := range s.slots {
		if t < s.slots[k] {
			k = i
		}
	}
	start := max(now, s.slots[k])
	s.slots[k] = start + d
	return start + d, fail
}

// simStats is the caller-side statistics of one provider: a ring of recent
// completions with running sums, and the in-flight count and start sum.
type simStats struct {
	lat, end [simWindow]int64
	fail     [simWindow]bool
	n, head  int
	okSum    int64
	okN      int64
	errSum   int64
	errN     int64
	last     int64

	inflight int64
	startSum int64
	timeout  time.Duration
}

func (s *simStats) add(end, lat int64, fail bool) {
	i := s.head
	if s.n == simWindow {
		if s.fail[i] {
			s.errSum -= s.lat[i]
			s.errN--
		} else {
			s.okSum -= s.lat[i]
			s.okN--
		}
	} else {
		s.n++
	}
	s.lat[i], s.end[i], s.fail[i] = lat, end, fail
	if fail {
		s.errSum += lat
		s.errN++
	} else {
		s.okSum += lat
		s.okN++
	}
	s.head = (i + 1) % simWindow
	s.last = end
}

func (s *simStats) stats() Stats {
	st := Stats{
		Samples:          int64(s.n),
		Errors:           s.errN,
		Timeout:          s.timeout,
		Inflight:         s.inflight,
		InflightStartSum: s.startSum,
	}
	if s.n == 0 {
		return st
	}
	oldest := 0
	if s.n == simWindow {
		oldest = s.head
	}
	st.Span = time.Duration(s.last - s.end[oldest])
	if s.okN > 0 {
		st.SuccessLatency = time.Duration(s.okSum / s.okN)
	}
	if s.errN > 0 {
		st.ErrorLatency = time.Duration(s.errSum / s.errN)
	}
	return st
}

type simEvent struct {
	t, start int64
	prov     int
	fail     bool
}

type simHeap []simEvent

func (h simHeap) Len() int           { return len(h) }
func (h simHeap) Less(i, j int) bool { return h[i].t < h[j].t }
func (h simHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)        { *h = append(*h, x.(simEvent)) }
func (h *simHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type sim struct {
	opts     Tuning
	servers  []*simServer
	stats    []*simStats
	known    []bool
	warm     []float64 // warmup factor of a provider without samples
	tree     *Tree
	rng      *rand.Rand
	now      int64
	events   simHeap
	interval int64 // between open-loop arrivals

	// results, per bucket of the virtual clock
	bucket   int64
	count    [][]int64 // [bucket][provider] completions
	latSum   []int64   // [bucket] sum of latencies
	errCount []int64   // [bucket]
}

func newSim(opts Tuning, seed uint64, bucket time.Duration, servers ...*simServer) *sim {
	s := &sim{
		opts:    opts,
		servers: servers,
		rng:     rand.New(rand.NewPCG(seed, 0x1a1b)),
		bucket:  int64(bucket),
	}
	init := make([]int64, len(servers))
	for i := range servers {
		s.stats = append(s.stats, &simStats{})
		s.known = append(s.known, false)
		s.warm = append(s.warm, 1)
		init[i] = int64(NewProviderWeight(0, 0, opts))
	}
	s.tree = NewTree(init)
	return s
}

// refresh recomputes provider i's weight, as the adapter does on feedback
// and on selection.
func (s *sim) refresh(i int) {
	w, ok := Weight(s.stats[i].stats(), s.now, s.opts)
	s.known[i] = ok
	if !ok {
		var sum int64
		n := 0
		for j, k := range s.known {
			if k {
				sum += s.tree.Weight(j)
				n++
			}
		}
		w = NewProviderWeight(sum, n, s.opts) * s.warm[i]
	}
	s.tree.Set(i, TreeWeight(w, s.tree.Total(), s.tree.Len(), s.opts))
}

// join adds a provider, as the adapter does on a membership change: a new
// tree with the old weights and, for the newcomer, the average weight of
// the providers that have their own, scaled by its warmup factor.
func (s *sim) join(srv *simServer, warm float64) {
	var sum int64
	n := 0
	for j, k := range s.known {
		if k {
			sum += s.tree.Weight(j)
			n++
		}
	}
	s.servers = append(s.servers, srv)
	s.stats = append(s.stats, &simStats{})
	s.known = append(s.known, false)
	s.warm = append(s.warm, warm)
	w := s.tree.Weights(nil)
	w = append(w, TreeWeight(NewProviderWeight(sum, n, s.opts)*warm, s.tree.Total(), len(w)+1, s.opts))
	s.tree = NewTree(w)
	for i := range s.count {
		s.count[i] = append(s.count[i], 0)
	}
}

func (s *sim) start() {
	i := s.tree.Choose(s.rng.Uint64())
	s.refresh(i)
	st := s.stats[i]
	st.inflight++
	st.startSum += s.now
	end, fail := s.servers[i].call(s.now, s.rng)
	heap.Push(&s.events, simEvent{t: end, start: s.now, prov: i, fail: fail})
}

// run starts callers closed-loop callers (each starts a new call as soon as
// its previous one completes) if the simulation has not started, and runs
// until the virtual clock reaches until.
func (s *sim) run(callers int, until time.Duration) {
	if len(s.events) == 0 {
		for range callers {
			s.start()
		}
	}
	s.loop(until, true)
}

// runOpen sends calls at a fixed rate (per second) whatever the state of
// the providers, as independent requests do, until the virtual clock
// reaches until.
func (s *sim) runOpen(rate float64, until time.Duration) {
	if len(s.events) == 0 {
		heap.Push(&s.events, simEvent{t: s.now, prov: arrival})
	}
	s.interval = int64(float64(sec) / rate)
	s.loop(until, false)
}

const arrival = -1 // simEvent.prov of an open-loop arrival

func (s *sim) loop(until time.Duration, closed bool) {
	for len(s.events) > 0 && s.events[0].t < int64(until) {
		e := heap.Pop(&s.events).(simEvent)
		s.now = e.t
		if e.prov == arrival {
			s.start()
			heap.Push(&s.events, simEvent{t: s.now + s.interval, prov: arrival})
			continue
		}
		st := s.stats[e.prov]
		st.inflight--
		st.startSum -= e.start
		st.add(e.t, e.t-e.start, e.fail)
		s.record(e)
		s.refresh(e.prov)
		if closed {
			s.start()
		}
	}
	s.now = int64(until)
}

func (s *sim) record(e simEvent) {
	b := int(e.t / s.bucket)
	for len(s.count) <= b {
		s.count = append(s.count, make([]int64, len(s.servers)))
		s.latSum = append(s.latSum, 0)
		s.errCount = append(s.errCount, 0)
	}
	s.count[b][e.prov]++
	s.latSum[b] += e.t - e.start
	if e.fail {
		s.errCount[b]++
	}
}

// share returns provider i's share of completions in buckets [from, to).
func (s *sim) share(i int, from, to time.Duration) float64 {
	var mine, all int64
	for b := int(int64(from) / s.bucket); b < int(int64(to)/s.bucket) && b < len(s.count); b++ {
		for j, c := range s.count[b] {
			all += c
			if j == i {
				mine += c
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(mine) / float64(all)
}

// throughput returns completions per second and mean latency over [from, to).
func (s *sim) throughput(from, to time.Duration) (qps float64, lat time.Duration) {
	var n, sum int64
	for b := int(int64(from) / s.bucket); b < int(int64(to)/s.bucket) && b < len(s.count); b++ {
		for _, c := range s.count[b] {
			n += c
		}
		sum += s.latSum[b]
	}
	if n == 0 {
		return 0, 0
	}
	return float64(n) / (to - from).Seconds(), time.Duration(sum / n)
}

// fixed returns a server whose calls all take d (no queueing).
func fixed(d time.Duration) *simServer {
	return &simServer{service: func(int64, *rand.Rand) (int64, bool) { return int64(d), false }}
}

// switching returns a server taking a before at and b from then on.
func switching(a, b time.Duration, at time.Duration) *simServer {
	return &simServer{service: func(now int64, _ *rand.Rand) (int64, bool) {
		if now < int64(at) {
			return int64(a), false
		}
		return int64(b), false
	}}
}

// queued returns a server with workers workers and exponential service
// times of mean d.
func queued(d time.Duration, workers int) *simServer {
	return &simServer{
		service: func(_ int64, rng *rand.Rand) (int64, bool) {
			return int64(rng.ExpFloat64() * float64(d)), false
		},
		slots: make([]int64, workers),
	}
}
