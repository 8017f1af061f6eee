package sim

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// envoyOverprovisioning is Envoy's overprovisioning factor, which the
// formula below applies as the module's zone routing does.
const envoyOverprovisioning = 1.4

// EnvoyCrossZone returns the share of the calls that Envoy's zone-aware
// routing sends out of the consumer's zone at t, computed here from the
// scenario alone (an oracle apart from package zone): each zone's
// capacity is the weight of its providers present at t (every provider
// weighs 100 here) that are healthy, those that fail every call not, times
// the overprovisioning factor, at most the zone's full weight; its
// callers' share is Zones.Callers; the local zone keeps
// min(1, capacity share / callers' share) of its calls.
func (s *Scenario) EnvoyCrossZone(t time.Duration) float64 {
	z := s.Zones
	if z == nil {
		return 0
	}
	full, healthy := map[string]float64{}, map[string]float64{}
	for i := range s.Providers {
		p := &s.Providers[i]
		if p.Join <= t && (p.Leave == 0 || t < p.Leave) {
			full[p.Zone] += 100
			if p.ErrorRateAt(t) < 1 {
				healthy[p.Zone] += 100
			}
		}
	}
	capacity := map[string]float64{}
	total := 0.0
	for zone, w := range full {
		capacity[zone] = min(w, envoyOverprovisioning*healthy[zone])
		total += capacity[zone]
	}
	callers := 0.0
	for _, c := range z.Callers {
		callers += c
	}
	up, down := capacity[z.Local]/total, z.Callers[z.Local]/callers
	if up >= down {
		return 0
	}
	return 1 - up/down
}

// ZonePhase is what a run did in one phase of a zone scenario.
type ZonePhase struct {
	Figures
	// Cross is the share of the calls that went to providers out of the
	// consumer's zone; Envoy is what Envoy's formula gives.
	Cross, Envoy float64
}

// ZonePhases returns the phases of r in sc, each from a second after its
// start (the routing has settled) to the next.
func (r *Result) ZonePhases(sc *Scenario) []ZonePhase {
	z := sc.Zones
	if z == nil {
		return nil
	}
	var out []ZonePhase
	for k, from := range z.Phases {
		to := sc.Duration
		if k+1 < len(z.Phases) {
			to = z.Phases[k+1]
		}
		f := r.Span(from+time.Second, to)
		var cross, n int64
		for i, c := range f.PerProvider {
			n += c
			if sc.Providers[i].Zone != z.Local {
				cross += c
			}
		}
		ph := ZonePhase{Figures: f, Envoy: sc.EnvoyCrossZone(from + time.Second)}
		if n > 0 {
			ph.Cross = float64(cross) / float64(n)
		}
		out = append(out, ph)
	}
	return out
}

// WriteZones writes, per run and phase, the share of the calls that left
// the consumer's zone beside Envoy's formula, and the callers' mean
// latency (a call across zones costs more).
func WriteZones(w io.Writer, sc *Scenario, results []*Result) error {
	if sc.Zones == nil || len(results) == 0 {
		return nil
	}
	fmt.Fprintf(w, "calls out of %s per phase (from 1 s after its start), beside Envoy's formula, and the mean latency\n", sc.Zones.Local)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "balancer\t")
	for _, ph := range results[0].ZonePhases(sc) {
		fmt.Fprintf(tw, "%v-%v cross\tEnvoy\tmean\t", ph.Start, ph.End)
	}
	fmt.Fprintf(tw, "\n")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t", r.Label())
		for _, ph := range r.ZonePhases(sc) {
			fmt.Fprintf(tw, "%.1f%%\t%.1f%%\t%s\t", 100*ph.Cross, 100*ph.Envoy, ms3(ph.Mean))
		}
		fmt.Fprintf(tw, "\n")
	}
	return tw.Flush()
}
