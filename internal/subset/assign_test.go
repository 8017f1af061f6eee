package subset

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The assignment alone: every consumer of a fleet runs Select, and the
// figures below are read from the subsets, no call is simulated. A consumer
// sends its calls over its subset in proportion to the members' weights (as
// every weighted balancer does on average), so provider p's load is the sum
// over the consumers holding it of w_p / (weight of their subset), and its
// fair load is consumers·w_p/(weight of all providers).

// method is how a fleet's consumers choose their subsets.
type method int

const (
	fullMesh method = iota
	apertureMethod
	rendezvousMethod
)

func (m method) String() string {
	return [...]string{"full mesh", "aperture", "rendezvous"}[m]
}

// fleet is one case of the table.
type fleet struct {
	consumers, providers, size int
	weighted                   bool
}

func (f fleet) String() string {
	w := "equal weights"
	if f.weighted {
		w = "weights 25/100/200"
	}
	return fmt.Sprintf("%d × %d, size %d, %s", f.consumers, f.providers, f.size, w)
}

// fleetProviders lists f's providers and one more, the one that joins.
func (f fleet) fleetProviders() []Provider {
	ps := make([]Provider, f.providers+1)
	for i := range ps {
		w := 100.0
		if f.weighted {
			switch i % 10 {
			case 7, 8:
				w = 200
			case 9:
				w = 25
			}
		}
		ps[i] = Provider{Key: fmt.Sprintf("10.%d.%d.%d:20880", i>>16, i>>8&255, i&255), Weight: w}
	}
	return ps
}

func consumerID(j int) string { return fmt.Sprintf("consumer-%d", j) }

// consumerAt is consumer j of n for method m; aperture alone knows its place.
func consumerAt(m method, id string, j, n int) Consumer {
	if m == apertureMethod {
		return Consumer{ID: id, Index: j, Count: n}
	}
	return Consumer{ID: id}
}

// assignment is what the table reports of one method on one fleet.
type assignment struct {
	connMin, connMax int
	connMean         float64
	// Consumers per provider, max and min over mean.
	countMax, countMin float64
	// Load over fair load, max and min over the providers of positive weight.
	loadMax, loadMin float64
	// Members replaced in a consumer's subset (max of removed, added) when a
	// provider joins, when one leaves, and, in the other consumers', when a
	// consumer joins at the middle of the order: max over consumers, mean,
	// and the share of consumers whose subset changed (of up to 1000
	// consumers, evenly spread).
	join, leave, consumerJoin churn
	// Each provider's consumers, load and fair load.
	count      []int
	load, fair []float64
}

type churn struct {
	max     int
	mean    float64
	changed float64
}

// assign runs fleet f's consumers with method m, with the churn figures when
// withChurn.
func assign(f fleet, m method, withChurn bool) assignment {
	all := f.fleetProviders()
	ps, joined, left := all[:f.providers], all, all[:f.providers-1]
	opts := Options{Size: f.size}
	if m == fullMesh {
		opts.Size = 0
	}
	q := f.consumers / 2 // where a consumer joins
	// Churn is measured on every consumer up to 1000 of them, on 1000 evenly
	// spread ones beyond.
	stride := max(1, f.consumers/1000)
	workers := runtime.GOMAXPROCS(0)
	type acc struct {
		connMin, connMax, connSum int
		count                     []int
		load                      []float64
		join, leave, cjoin        churnAcc
	}
	accs := make([]acc, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &accs[w]
			a.connMin, a.count, a.load = math.MaxInt, make([]int, len(ps)), make([]float64, len(ps))
			var base, other []int
			for j := w; j < f.consumers; j += workers {
				id := consumerID(j)
				base = Select(base, ps, consumerAt(m, id, j, f.consumers), opts, nil)
				a.connMin, a.connMax, a.connSum = min(a.connMin, len(base)), max(a.connMax, len(base)), a.connSum+len(base)
				sum := 0.0
				for _, i := range base {
					sum += ps[i].Weight
				}
				for _, i := range base {
					a.count[i]++
					a.load[i] += ps[i].Weight / sum
				}
				if !withChurn || j%stride != 0 {
					continue
				}
				other = Select(other, joined, consumerAt(m, id, j, f.consumers), opts, nil)
				a.join.add(base, other)
				other = Select(other, left, consumerAt(m, id, j, f.consumers), opts, nil)
				a.leave.add(base, other)
				k := j
				if j >= q {
					k++
				}
				other = Select(other, ps, consumerAt(m, id, k, f.consumers+1), opts, nil)
				a.cjoin.add(base, other)
			}
		}()
	}
	wg.Wait()
	var r assignment
	r.connMin = math.MaxInt
	count, load := make([]int, len(ps)), make([]float64, len(ps))
	var join, leave, cjoin churnAcc
	conns := 0
	for _, a := range accs {
		r.connMin, r.connMax, conns = min(r.connMin, a.connMin), max(r.connMax, a.connMax), conns+a.connSum
		for i := range ps {
			count[i] += a.count[i]
			load[i] += a.load[i]
		}
		join.merge(a.join)
		leave.merge(a.leave)
		cjoin.merge(a.cjoin)
	}
	r.connMean = float64(conns) / float64(f.consumers)
	meanCount := float64(conns) / float64(len(ps))
	r.countMin, r.loadMin = math.Inf(1), math.Inf(1)
	totalWeight := 0.0
	for _, p := range ps {
		totalWeight += p.Weight
	}
	for i, p := range ps {
		r.countMax = max(r.countMax, float64(count[i])/meanCount)
		r.countMin = min(r.countMin, float64(count[i])/meanCount)
		fair := float64(f.consumers) * p.Weight / totalWeight
		r.fair = append(r.fair, fair)
		r.loadMax = max(r.loadMax, load[i]/fair)
		r.loadMin = min(r.loadMin, load[i]/fair)
	}
	r.count, r.load = count, load
	if withChurn {
		r.join, r.leave, r.consumerJoin = join.churn(), leave.churn(), cjoin.churn()
	}
	return r
}

type churnAcc struct{ max, sum, changed, seen int }

// add counts the members replaced from subset a to subset b (both ascending
// indices into lists that agree on their common prefix).
func (c *churnAcc) add(a, b []int) {
	removed, added := 0, 0
	for i, j := 0, 0; i < len(a) || j < len(b); {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			removed++
			i++
		case i == len(a) || b[j] < a[i]:
			added++
			j++
		default:
			i++
			j++
		}
	}
	n := max(removed, added)
	c.max, c.sum, c.seen = max(c.max, n), c.sum+n, c.seen+1
	if n > 0 {
		c.changed++
	}
}

func (c *churnAcc) merge(o churnAcc) {
	c.max, c.sum, c.changed, c.seen = max(c.max, o.max), c.sum+o.sum, c.changed+o.changed, c.seen+o.seen
}

func (c churnAcc) churn() churn {
	return churn{max: c.max, mean: float64(c.sum) / float64(c.seen), changed: float64(c.changed) / float64(c.seen)}
}

// tableFleet is the largest fleet TestAssignmentTable prints; 10000 for the
// table of docs/benchmarks.md (minutes).
var tableFleet = flag.Int("subset.fleet", 1000, "largest consumers × providers of TestAssignmentTable")

// TestAssignmentTable prints the table of docs/benchmarks.md ("Subsetting:
// the assignment"):
//
//	go test ./internal/subset -run TestAssignmentTable -v -subset.fleet 10000
func TestAssignmentTable(t *testing.T) {
	fleets := []fleet{{100, 100, 10, false}, {100, 100, 10, true}}
	for n := 1000; n <= *tableFleet; n *= 10 {
		fleets = append(fleets, fleet{n, n, 20, false}, fleet{n, n, 20, true})
	}
	if testing.Short() || raceEnabled {
		fleets = fleets[:2]
	}
	var b strings.Builder
	b.WriteString("| fleet (consumers × providers) | method | connections per consumer (min/mean/max) | consumers per provider max/mean (min/mean) | load/fair max (min) | provider joins: replaced max, mean (consumers changed) | provider leaves | consumer joins |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range fleets {
		for _, m := range []method{fullMesh, apertureMethod, rendezvousMethod} {
			r := assign(f, m, true)
			fmt.Fprintf(&b, "| %v | %v | %d / %.1f / %d | %.3f (%.3f) | %.3f (%.3f) | %v | %v | %v |\n",
				f, m, r.connMin, r.connMean, r.connMax, r.countMax, r.countMin, r.loadMax, r.loadMin, r.join, r.leave, r.consumerJoin)
		}
	}
	t.Log("\n" + b.String())
}

func (c churn) String() string {
	return fmt.Sprintf("%d, %.3f (%.1f %%)", c.max, c.mean, 100*c.changed)
}
