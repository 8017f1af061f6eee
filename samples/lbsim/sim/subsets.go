package sim

import (
	"fmt"
	"io"
	"reflect"
	"text/tabwriter"
	"time"
)

// Twins returns the groups of two or more providers of s that are alike
// in everything but their name (the copies of a wide scenario), in the
// order of their first member.
func (s *Scenario) Twins() [][]int {
	var groups [][]int
	for i := range s.Providers {
		placed := false
		for g, grp := range groups {
			if alikeBut(&s.Providers[grp[0]], &s.Providers[i]) {
				groups[g] = append(groups[g], i)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
	}
	var twins [][]int
	for _, g := range groups {
		if len(g) > 1 {
			twins = append(twins, g)
		}
	}
	return twins
}

// alikeBut reports whether a and b are alike in everything but their name.
func alikeBut(a, b *Provider) bool {
	x, y := *a, *b
	x.Name, y.Name = "", ""
	return reflect.DeepEqual(x, y)
}

// Fastest returns the providers of s with the smallest service time at t
// after the start.
func (s *Scenario) Fastest(t time.Duration) []int {
	var set []int
	var best time.Duration
	for i := range s.Providers {
		switch d := s.Providers[i].LatencyAt(t); {
		case len(set) == 0 || d < best:
			set, best = []int{i}, d
		case d == best:
			set = append(set, i)
		}
	}
	return set
}

// Spread returns, over the groups of alike providers (Scenario.Twins), the
// largest ratio of a provider's calls to its group's mean: 1 when every
// copy of a provider served as many calls as the others, as a balancer over
// the full set gives them; 0 when sc has no such group or no calls.
func (r *Result) Spread(sc *Scenario) float64 {
	spread := 0.0
	for _, g := range sc.Twins() {
		var sum, top int64
		for _, i := range g {
			sum += r.Total.PerProvider[i]
			top = max(top, r.Total.PerProvider[i])
		}
		if sum > 0 {
			spread = max(spread, float64(top)*float64(len(g))/float64(sum))
		}
	}
	return spread
}

// WriteSubsets writes, per balancer, the figures of the runs of each of
// scs (the same deployment over the full set, then over subsets; results
// [k] are the runs of scs[k], in one order of balancers): throughput, and
// its share of the first scenario's and of the capacity bound when there
// is one, mean and p99 latency, the time to follow the first mark's
// reversal when there is one (Result.FollowTime from the fastest before to
// the fastest after), and the spread of calls over alike providers
// (Result.Spread).
func WriteSubsets(w io.Writer, scs []*Scenario, results [][]*Result) error {
	if len(scs) == 0 || len(results) != len(scs) {
		return fmt.Errorf("sim: %d scenarios, %d lists of results", len(scs), len(results))
	}
	first := scs[0]
	bound := first.Bound()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "balancer\tproviders\tcalls/s\tof full set")
	if bound > 0 {
		fmt.Fprintf(tw, "\tof bound")
	}
	fmt.Fprintf(tw, "\tmean\tp99")
	if len(first.Marks) > 0 {
		fmt.Fprintf(tw, "\tfollows")
	}
	fmt.Fprintf(tw, "\tmax/mean of alike\n")
	for b, full := range results[0] {
		for k, sc := range scs {
			if b >= len(results[k]) {
				return fmt.Errorf("sim: scenario %s has %d results, not %d", sc.Name, len(results[k]), len(results[0]))
			}
			r := results[k][b]
			set := "full set"
			if sc.Subset.Size > 0 {
				set = fmt.Sprintf("subsets of %d, %s", sc.Subset.Size, map[bool]string{false: "aperture", true: "rendezvous"}[sc.Subset.Rendezvous])
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f%%", r.Label(), set, r.Total.QPS(), 100*r.Total.QPS()/full.Total.QPS())
			if bound > 0 {
				fmt.Fprintf(tw, "\t%.1f%%", 100*r.Total.QPS()/bound)
			}
			fmt.Fprintf(tw, "\t%s\t%s", ms3(r.Total.Mean), ms3(r.Total.P99))
			if len(sc.Marks) > 0 {
				rev := sc.Marks[0].At
				follow := "never"
				if f := r.FollowTime(rev, sc.Fastest(rev-1), sc.Fastest(rev)); f >= 0 {
					follow = fmt.Sprintf("%.1f s", f.Seconds())
				}
				fmt.Fprintf(tw, "\t%s", follow)
			}
			fmt.Fprintf(tw, "\t%.2f\n", r.Spread(sc))
		}
	}
	return tw.Flush()
}
