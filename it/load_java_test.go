package it

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A mixed fleet of two Go providers with the lbload filter and one Dubbo
// Java 3.3.6 provider, all sleeping 5 ms a call, under three consumer
// processes with the loadaware balancer. Each consumer reads the Java
// provider's load, which is its machine's: close to what /proc/loadavg
// says at the time (× 100 / CPUs), and to the machine load our Go
// providers report beside their own CPU; the consumers and the metrics
// show it as Java's load, not as a utilization of the provider. The Java
// provider borrows the mean value of the Go providers (it reports no
// utilization nor rates of ours), so loadaware ranks it as an average
// provider of its own latency: it is neither starved nor flooded
// (javaShareBand); no call fails.
func TestProviderLoadJavaProviderIsReadAndNeitherStarvedNorFlooded(t *testing.T) {
	e := setup(t)
	needJava(t)
	ps := e.startRegistered(t,
		providerSpec{name: "go1", latency: "5ms"},
		providerSpec{name: "go2", latency: "5ms"},
		providerSpec{name: "java", latency: "5ms", java: true},
	)
	addr := func(p *provider) string { return "127.0.0.1:" + strconv.Itoa(p.spec.port) }
	java := addr(ps[2])
	metricsPort := strconv.Itoa(freePort(t))
	page := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cs := e.startConsumers(t, len(ps),
		consumerSpec{balancer: "loadaware", name: "consumer 1", args: []string{"-metrics", metricsPort, "-debug", page}},
		consumerSpec{balancer: "loadaware", name: "consumer 2"},
		consumerSpec{balancer: "loadaware", name: "consumer 3"},
	)

	// Every consumer reads every provider's machine load, and the Go
	// providers' utilization; the Java provider's load is its machine's:
	// /proc/loadavg as the test reads it around the report, and the
	// machine load the Go providers sent at the same time.
	for _, c := range cs {
		lo, hi := machineLoad(t)
		r := c.until(t, 3*time.Minute, "receiving the load of every provider", func(r report) bool {
			if len(r.JavaLoad) < len(ps) || len(r.Load) < 2 {
				return false
			}
			l, h := machineLoad(t)
			lo, hi = min(lo, l), max(hi, h)
			return true
		})
		if _, ok := r.Load[java]; ok {
			t.Errorf("%s: the Java provider has a utilization %v: its load is its machine's", c.name, r.Load[java])
		}
		got := r.JavaLoad[java]
		if tol := loadTolerance(hi); got < lo-tol || got > hi+tol {
			t.Errorf("%s: the Java provider's load %.1f, want /proc/loadavg × 100 / %d CPUs of the moment, %.1f to %.1f ± %.1f", c.name, got, runtime.NumCPU(), lo, hi, tol)
		}
		for _, p := range ps[:2] {
			if g := r.JavaLoad[addr(p)]; math.Abs(g-got) > loadTolerance(max(g, got)) {
				t.Errorf("%s: the Java provider's load %.1f, %s's (the same machine) %.1f", c.name, got, p.spec.name, g)
			}
		}
		t.Logf("%s: Java's load %.1f (/proc/loadavg: %.1f to %.1f), machine load of the Go providers %v, their utilization %v", c.name, got, lo, hi, r.JavaLoad, r.Load)
	}

	// Past the blackout (3 s) and some adaptation, the shares of all
	// consumers together.
	var rs []report
	for _, c := range cs {
		c.collectCalls(t, 500)
	}
	if path := os.Getenv(envScreenshotLoad); path != "" {
		if err := screenshot("http://"+page+"/", path, 18); err != nil {
			t.Errorf("screenshot: %v", err)
		}
	}
	for _, c := range cs {
		rs = append(rs, c.collectCalls(t, shareCalls/3))
	}
	m := merge(rs)
	lo, hi, rho := javaShareBand(m, "java", "go1", "go2")
	got := m.share("java")
	if got < lo || got > hi {
		t.Errorf("the Java provider got %.1f%% of %d calls, want %.1f%% to %.1f%% (latency ratio %.2f; %s); %v", got, successes(m), lo, hi, rho, latencies(m), m)
	} else {
		t.Logf("the Java provider got %.1f%% of %d calls (band %.1f%% to %.1f%%, latency ratio %.2f; %s); %v", got, successes(m), lo, hi, rho, latencies(m), m)
	}

	// The metrics show Java's load for every provider, a utilization for
	// the Go providers only.
	mfs := scrape(t, metricsPort)
	for _, p := range ps {
		want := map[string]string{"provider": addr(p), "loadbalance": "loadaware"}
		util := value(mfs["dubbo_consumer_lb_reported_utilization_ratio"], want)
		jl := value(mfs["dubbo_consumer_lb_reported_java_load_ratio"], want)
		if p.spec.java != math.IsNaN(util) || math.IsNaN(jl) || jl < 0 {
			t.Errorf("metrics of %s: reported utilization %v, Java load %v; want a utilization for Go providers only, a Java load for all", p.spec.name, util, jl)
		} else {
			t.Logf("metrics of %s: reported utilization %v, Java load %v", p.spec.name, util, jl)
		}
	}
	for _, c := range cs {
		noErrors(t, c, c.finish(t))
	}
}

// envScreenshotLoad names the file to save a screenshot of the live page
// of a loadaware consumer to, with the providers' reported load beside
// the consumer's figures (loadbalance/describe/page-load.png).
const envScreenshotLoad = "DUBBOGO_LB_SCREENSHOT_LOAD"

// machineLoad returns /proc/loadavg's 1-minute load average × 100 / CPUs
// (what Dubbo Java's load is, and our providers send in its place) twice,
// as bounds; where there is no /proc/loadavg it skips t, or fails it in
// CI (missing).
func machineLoad(t *testing.T) (lo, hi float64) {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		missing(t, "no load average here: %v", err)
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		t.Fatalf("/proc/loadavg %q: %v", b, err)
	}
	l := f * 100 / float64(runtime.NumCPU())
	return l, l
}

// loadTolerance is how far, in points, two readings of the machine's
// 1-minute load average × 100 / CPUs may differ when taken within a few
// seconds of each other, about load: the kernel recomputes it every 5 s,
// moving it by 8 % (1 - e^(-5/60)) of its distance to the number of
// runnable tasks; a reading taken one recomputation before or after the
// other's moves by that much. A busy machine's runnable count is a few
// times its load at most (seen here: load 10, up to 30 runnable), so 20 %
// of the load covers two recomputations; 2 points more for the rounding
// of /proc/loadavg (0.01) and Java's printing of doubles.
func loadTolerance(load float64) float64 { return 0.2*load + 2 }

// javaShareBand returns the share, in percent, that loadaware may give
// the provider named java of r among the others (Go providers with the
// lbload filter) without starving or flooding it, and the ratio ρ of its
// mean latency to theirs (logged, not used).
//
// The Java provider reports no utilization nor rates of ours, so
// loadaware gives it the mean value of the others and ranks it as an
// average Go provider with its own latency. Where its share lands between
// the extremes depends on more than the mean latencies show: the Go
// providers' values come from their CPU utilization, measured by each
// over 1 s on a machine shared with everything else, and move by tens of
// percent from second to second, and the mean the Java provider borrows
// moves with them. A first band derived from the latency ratio alone
// (1/(1 + kρ) to 1/(1 + kρ²) among k others, ± 8 points) was missed in
// a CI run: 27.8 % at ρ = 0.74 where it said 28.7 % at least (other runs:
// 35.3 % and 39.6 %). So the test asserts what its name says, with the
// equal share 1/(k + 1) in the middle. Starved: less than half of it,
// 1/(2(k + 1)), less the sampling noise of the calls measured, where an
// algorithm that read Java's machine load as its utilization puts it (it
// lost every comparison: loadaware/DESIGN.md); 15.3 % of 3215 calls was
// measured at a load average of 40 on 2 cores, close to that edge, so it
// is not tightened further. Flooded: more than halfway from the equal
// share to 2/(k + 1), the most power of two choices gives a provider that
// wins every comparison, where an algorithm that took Java's missing
// utilization for 0 puts it; not widened by the noise (4 points at 3000
// calls): the shares measured, up to 39.6 %, stay 10 points below.
func javaShareBand(r report, java string, others ...string) (lo, hi, rho float64) {
	var calls int64
	sum := 0.0
	for _, p := range others {
		if m, ok := r.mean(p); ok {
			calls += r.By[p]
			sum += m * float64(r.By[p])
		}
	}
	if jm, ok := r.mean(java); ok && calls > 0 {
		rho = jm / (sum / float64(calls))
	} else {
		rho = math.NaN()
	}
	k := float64(len(others))
	equal := 100 / (k + 1)
	return equal/2 - noise(equal/2, successes(r)), (equal + 2*equal) / 2, rho
}
