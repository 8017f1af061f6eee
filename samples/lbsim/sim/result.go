package sim

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one run measured, from the callers' side.
type Result struct {
	// Scenario and Balancer name the run.
	Scenario, Balancer string
	// Providers are the providers' names, in the scenario's order.
	Providers []string
	// Marks are the scenario's scripted changes.
	Marks []Mark
	// Bucket is the width of Buckets.
	Bucket time.Duration
	// Buckets are the figures of consecutive slices of virtual time.
	Buckets []Bucket
	// Total are the figures of the whole run.
	Total Figures
	// Note says how the balancer ran, when that matters to its figures.
	Note string
	// Panics counts calls whose Select or Invoke panicked; FirstPanic is
	// the first panic's value.
	Panics     int64
	FirstPanic string
	// Unrouted counts Selects that returned no provider (nil) or one that
	// was not in the list.
	Unrouted int64
	// EjectionOff is true when the run had outlier ejection turned off.
	EjectionOff bool
	// Subsets are, when the scenario subsets, the providers (indices of
	// Providers) each consumer held at the start, by consumer index.
	Subsets [][]int
}

// Label names the run: the balancer, and "no ejection" when ejection was
// off for one of this module's balancers.
func (r *Result) Label() string {
	if r.EjectionOff && Ours(r.Balancer) {
		return r.Balancer + " (no ejection)"
	}
	return r.Balancer
}

// Figures are the calls completed in a span of virtual time.
type Figures struct {
	// Start and End delimit the span.
	Start, End time.Duration
	// Calls is the number of calls completed, Errors how many failed.
	Calls, Errors int64
	// PerProvider counts the calls each provider completed.
	PerProvider []int64
	// Mean and P99 are the callers' latency: from Select to the answer,
	// queueing included.
	Mean, P99 time.Duration
}

// Bucket is one slice of a Result's time line.
type Bucket = Figures

// QPS returns calls completed per second of virtual time.
func (f Figures) QPS() float64 {
	if f.End <= f.Start {
		return 0
	}
	return float64(f.Calls) / (f.End - f.Start).Seconds()
}

// Failed returns the fraction, in [0, 1], of the calls that failed, or 0
// when there were none.
func (f Figures) Failed() float64 {
	if f.Calls == 0 {
		return 0
	}
	return float64(f.Errors) / float64(f.Calls)
}

// Share returns the fraction, in [0, 1], of the calls that provider i
// completed, or 0 when there were none.
func (f Figures) Share(i int) float64 {
	var n int64
	for _, c := range f.PerProvider {
		n += c
	}
	if n == 0 || i < 0 || i >= len(f.PerProvider) {
		return 0
	}
	return float64(f.PerProvider[i]) / float64(n)
}

// Span returns the figures of the buckets that lie within [from, to), with
// the mean but no P99 (the buckets keep no samples).
func (r *Result) Span(from, to time.Duration) Figures {
	f := Figures{Start: -1, PerProvider: make([]int64, len(r.Providers))}
	var latSum float64
	for _, b := range r.Buckets {
		if b.Start < from || b.End > to {
			continue
		}
		if f.Start < 0 {
			f.Start = b.Start
		}
		f.End = b.End
		f.Calls += b.Calls
		f.Errors += b.Errors
		for i, c := range b.PerProvider {
			f.PerProvider[i] += c
		}
		latSum += float64(b.Mean) * float64(b.Calls)
	}
	if f.Start < 0 {
		f.Start = 0
	}
	if f.Calls > 0 {
		f.Mean = time.Duration(latSum / float64(f.Calls))
	}
	return f
}

// recorder collects the outcome of every call of a run. Calls complete in
// time order, so each bucket's latencies are a contiguous run of lat.
type recorder struct {
	res Result
	lat []int64 // ns, in completion order
}

func (rec *recorder) init(sc *Scenario, bucket time.Duration) {
	rec.res = Result{Scenario: sc.Name, Bucket: bucket, Marks: sc.Marks}
	for _, p := range sc.Providers {
		rec.res.Providers = append(rec.res.Providers, p.Name)
	}
	n := int((sc.Duration + bucket - 1) / bucket)
	rec.res.Buckets = make([]Bucket, n)
	for i := range rec.res.Buckets {
		b := &rec.res.Buckets[i]
		b.Start = time.Duration(i) * bucket
		b.End = min(b.Start+bucket, sc.Duration)
		b.PerProvider = make([]int64, len(sc.Providers))
	}
	rec.res.Total = Figures{End: sc.Duration, PerProvider: make([]int64, len(sc.Providers))}
}

// bucket returns the bucket of a call that ended at end (monotonic ns).
func (rec *recorder) bucket(end int64) *Bucket {
	i := int(time.Duration(end-Origin) / rec.res.Bucket)
	return &rec.res.Buckets[min(max(i, 0), len(rec.res.Buckets)-1)]
}

// add records a call that ended at end after starting at start.
func (rec *recorder) add(provider int, start, end int64, failed bool) {
	b := rec.bucket(end)
	b.Calls++
	if failed {
		b.Errors++
	}
	if provider >= 0 {
		b.PerProvider[provider]++
	}
	rec.lat = append(rec.lat, end-start)
}

func (rec *recorder) done(provider int, start, end int64, failed bool) {
	rec.add(provider, start, end, failed)
}

// unrouted records a Select at now that returned no provider of the list.
func (rec *recorder) unrouted(now int64) {
	rec.res.Unrouted++
	rec.add(-1, now, now, true)
}

// panicked records a Select that panicked at now with v.
func (rec *recorder) panicked(v string, now int64) {
	if rec.res.Panics == 0 {
		rec.res.FirstPanic = v
	}
	rec.res.Panics++
	rec.add(-1, now, now, true)
}

// finish computes the latency figures and returns the result.
func (rec *recorder) finish() *Result {
	res := &rec.res
	at := 0
	for i := range res.Buckets {
		b := &res.Buckets[i]
		n := int(b.Calls)
		b.Mean, b.P99 = latency(rec.lat[at : at+n])
		at += n
		res.Total.Calls += b.Calls
		res.Total.Errors += b.Errors
		for j, c := range b.PerProvider {
			res.Total.PerProvider[j] += c
		}
	}
	res.Total.Mean, res.Total.P99 = latency(rec.lat)
	rec.lat = nil
	return res
}

// latency returns the mean and the 99th percentile of lat, sorting it.
func latency(lat []int64) (mean, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	var sum float64
	for _, l := range lat {
		sum += float64(l)
	}
	slices.Sort(lat)
	i := min(int(float64(len(lat))*0.99), len(lat)-1)
	return time.Duration(sum / float64(len(lat))), time.Duration(lat[i])
}

// WriteTable writes the per-bucket figures of r: each provider's share of
// the traffic, throughput, mean and p99 latency.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "t\t")
	for _, p := range r.Providers {
		fmt.Fprintf(tw, "%s\t", p)
	}
	fmt.Fprintf(tw, "qps\tmean\tp99\terr\t\n")
	row := func(label string, f *Figures) {
		fmt.Fprintf(tw, "%s\t", label)
		for i := range r.Providers {
			fmt.Fprintf(tw, "%.1f%%\t", 100*f.Share(i))
		}
		fmt.Fprintf(tw, "%.0f\t%s\t%s\t%d\t\n", f.QPS(), ms3(f.Mean), ms3(f.P99), f.Errors)
	}
	for i := range r.Buckets {
		b := &r.Buckets[i]
		row(fmt.Sprintf("%gs", b.End.Seconds()), b)
	}
	row("all", &r.Total)
	return tw.Flush()
}

// ms3 formats d in milliseconds with three digits after the point.
func ms3(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}

// WriteSummary writes one line per result: throughput, latency and the
// providers' shares over the whole run.
func WriteSummary(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "balancer\tqps\tmean\tp99\terrors\tshares\tnote\n")
	for _, r := range results {
		shares := make([]string, len(r.Providers))
		for i := range shares {
			shares[i] = fmt.Sprintf("%.1f%%", 100*r.Total.Share(i))
		}
		note := r.Note
		if r.Panics > 0 {
			note = strings.TrimPrefix(fmt.Sprintf("%s; %d panics, first: %s", note, r.Panics, r.FirstPanic), "; ")
		}
		if r.Unrouted > 0 {
			note = strings.TrimPrefix(fmt.Sprintf("%s; %d selects returned no provider of the list", note, r.Unrouted), "; ")
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%d\t%s\t%s\n", r.Label(), r.Total.QPS(), ms3(r.Total.Mean), ms3(r.Total.P99),
			r.Total.Errors, strings.Join(shares, " "), note)
	}
	return tw.Flush()
}

// FailureFigures are what a run shows of a scenario's failure spell.
type FailureFigures struct {
	// During are the calls from 1 s after the spell began to its end: every
	// call of the simulator is a first attempt (there are no retries).
	During Figures
	// After are the calls of the last fifth of the run after the spell
	// (in the built-in scenarios, once an ejection of 30 s begun when the
	// spell began is over).
	After Figures
}

// FailureFigures returns the figures of sc's failure spell in r.
func (r *Result) FailureFigures(sc *Scenario) FailureFigures {
	f := sc.Failure
	to := f.To
	if to == 0 {
		to = sc.Duration
	}
	return FailureFigures{
		During: r.Span(f.From+time.Second, to),
		After:  r.Span(max(to, sc.Duration-sc.Duration/5), sc.Duration),
	}
}

// WriteFailures writes, per run, the failed first attempts and the failing
// provider's share while it fails (from 1 s after it starts), and its share
// at the end of the run, after the spell.
func WriteFailures(w io.Writer, sc *Scenario, results []*Result) error {
	if sc.Failure == nil || len(results) == 0 {
		return nil
	}
	p := sc.Failure.Provider
	name := results[0].Providers[p]
	ff := results[0].FailureFigures(sc)
	fmt.Fprintf(w, "failed first attempts while %s fails, from 1 s after it starts (%v-%v); its share then and at the end (%v-%v)\n",
		name, ff.During.Start, ff.During.End, ff.After.Start, ff.After.End)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "balancer\tejection\tfailed\tshare while failing\tshare at the end\tqps while failing\t\n")
	for _, r := range results {
		ff := r.FailureFigures(sc)
		ejection := "on"
		switch {
		case !Ours(r.Balancer):
			ejection = "-"
		case r.EjectionOff:
			ejection = "off"
		}
		failed := 0.0
		if ff.During.Calls > 0 {
			failed = float64(ff.During.Errors) / float64(ff.During.Calls)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t%.2f%%\t%.1f%%\t%.0f\t\n", r.Balancer, ejection, 100*failed,
			100*ff.During.Share(p), 100*ff.After.Share(p), ff.During.QPS())
	}
	return tw.Flush()
}

// WriteCapacity writes, for a scenario whose providers all have a
// capacity, each run's throughput against the capacity bound
// (Scenario.Bound) and its latency.
func WriteCapacity(w io.Writer, sc *Scenario, results []*Result) error {
	bound := sc.Bound()
	if bound <= 0 {
		return nil
	}
	fmt.Fprintf(w, "throughput against the capacity bound (%.0f calls/s)\n", bound)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "balancer\tqps\tof bound\tmean\tp99\terrors\n")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f%%\t%s\t%s\t%d\n", r.Label(), r.Total.QPS(), 100*r.Total.QPS()/bound,
			ms3(r.Total.Mean), ms3(r.Total.P99), r.Total.Errors)
	}
	return tw.Flush()
}

// share returns the fraction of f's calls that the providers of set
// completed.
func (f Figures) share(set []int) float64 {
	var s float64
	for _, i := range set {
		s += f.Share(i)
	}
	return s
}

// FollowTime returns how long after rev the balancer followed a reversal
// that made the providers fast the fastest in place of the providers slow:
// the start of the first bucket from which, in every bucket to the end of
// the run, fast get at least 90 % of the share slow got in the 2 s before
// rev (the share the same balancer gives the fastest in steady state), and
// at least 40 % (above the uniform third of brpc's experiment, so that a
// balancer that ignores latency never follows), less four binomial
// standard deviations of the bucket's calls; -1 if it never did, or only in
// the last minFollowBuckets buckets (a blind balancer's last bucket or two
// can pass four deviations by chance; three in a row do not).
func (r *Result) FollowTime(rev time.Duration, slow, fast []int) time.Duration {
	return r.followTime(rev, slow, fast, 0.4)
}

// followTime is FollowTime with floor in place of its 40 %: over subsets,
// where a balancer that ignores latency gives fast more than their count's
// share (a consumer whose subset is faster calls more often), floor is
// above that share.
func (r *Result) followTime(rev time.Duration, slow, fast []int, floor float64) time.Duration {
	need := max(0.9*r.Span(rev-2*time.Second, rev).share(slow), floor)
	t, held := time.Duration(-1), 0
	for _, b := range r.Buckets {
		tol := 4 * math.Sqrt(need*(1-need)/float64(max(b.Calls, 1)))
		switch {
		case b.Start < rev:
		case b.share(fast) >= need-tol:
			if t < 0 {
				t = b.Start - rev
			}
			held++
		default:
			t, held = -1, 0
		}
	}
	if held < minFollowBuckets {
		return -1
	}
	return t
}

// minFollowBuckets is the fewest buckets a follow must hold to the end of
// the run to count.
const minFollowBuckets = 3
