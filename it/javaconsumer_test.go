package it

import (
	"bufio"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/internal/callstats"
)

// The Dubbo Java consumer of the greeter (JavaConsumer in it/javaprovider,
// run by it/javaprovider.sh consume).

// javaSummary is the JSON line the Java consumer prints at the end: the
// sample consumer's fields that it measures too (calls, errors, seconds,
// by, mean_ms, last_error), and Dubbo's own view of the providers.
type javaSummary struct {
	callstats.Stats
	JavaConsumer bool `json:"java_consumer"`
	// Adaptive is what Dubbo's AdaptiveMetrics recorded per provider
	// (host:port): the load and curTime of its last lb_adaptive report
	// (0 when none came), its RT average, its calls.
	Adaptive map[string]struct {
		Load      float64 `json:"load"`
		CurTime   int64   `json:"cur_time"`
		Ewma      float64 `json:"ewma"`
		Requests  int64   `json:"requests"`
		Successes int64   `json:"successes"`
		Errors    int64   `json:"errors"`
	} `json:"adaptive"`
}

// javaConsumerDeadline bounds a run of the Java consumer: its JVM start,
// its discovery and its calls (about 100 a second on the busy 2 cores).
const javaConsumerDeadline = 6 * time.Minute

// runJavaConsumer runs the Java consumer in e's group with args (-calls,
// -callers, -providers, ...) until it exits, and returns its summary and
// the machine load (machineLoad) read over the last seconds of its run,
// when it took its last reports. It fails t if the consumer does not end
// within javaConsumerDeadline or prints no summary.
func (e *env) runJavaConsumer(t *testing.T, args ...string) (s javaSummary, loadLo, loadHi float64) {
	t.Helper()
	needJava(t)
	args = append([]string{"consume", "-registry", e.nacos, "-group", e.group}, args...)
	if e.username != "" {
		args = append(args, "-namespace", e.namespace, "-username", e.username, "-password", e.password)
	}
	p := startJava(t, "java consumer", args...)

	// The machine load of the last 10 s (the consumer's last reports were
	// taken within a second of its exit).
	type reading struct {
		at   time.Time
		load float64
	}
	var recent []reading
	deadline := time.After(javaConsumerDeadline)
	tick := time.NewTicker(500 * time.Millisecond) // sampling /proc/loadavg
	defer tick.Stop()
wait:
	for {
		select {
		case <-p.done:
			break wait
		case <-deadline:
			t.Fatalf("%s still running after %v; log:\n%s", p.name, javaConsumerDeadline, tail(p.log.String(), 30))
		case now := <-tick.C:
			l, _ := machineLoad(t)
			recent = append(recent, reading{now, l})
			for len(recent) > 1 && now.Sub(recent[0].at) > 10*time.Second {
				recent = recent[1:]
			}
		}
	}
	loadLo, loadHi = machineLoad(t)
	for _, r := range recent {
		loadLo, loadHi = min(loadLo, r.load), max(loadHi, r.load)
	}
	if p.err != nil {
		t.Fatalf("%s: %v; log:\n%s", p.name, p.err, tail(p.log.String(), 30))
	}
	sc := bufio.NewScanner(strings.NewReader(p.log.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if line := sc.Bytes(); json.Unmarshal(line, &s) == nil && s.JavaConsumer {
			return s, loadLo, loadHi
		}
	}
	t.Fatalf("%s printed no summary; log:\n%s", p.name, tail(p.log.String(), 30))
	panic("unreachable")
}

// answeredRe matches what a sample provider prints on exit: the calls its
// lbload filter answered with a load report.
var answeredRe = regexp.MustCompile(`provider (\S+): answered (\d+) load reports`)

// answered stops p and returns how many calls its lbload filter answered
// with a load report.
func answered(t *testing.T, p *provider) int64 {
	t.Helper()
	p.stop()
	m := answeredRe.FindStringSubmatch(p.log.String())
	if m == nil || m[1] != p.spec.name {
		t.Fatalf("%s printed no count of answered load reports; log:\n%s", p.name, tail(p.log.String(), 20))
	}
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		t.Fatalf("%s: %q: %v", p.name, m[0], err)
	}
	return n
}

// javaAdaptiveCalls is how many calls the Java consumer makes: enough for
// every provider to answer hundreds, a minute at most on the busy 2 cores.
const javaAdaptiveCalls = 1500

// A Dubbo Java 3.3.6 consumer with Dubbo's adaptive balancer calls two Go
// sample providers with the lbload filter over triple, found through
// Nacos (their interface-level registrations). Java's adaptive asks every
// call for the provider's load (lb_adaptive); our filter answers it in
// Java's format, as a triple trailer, and Java's triple client hands the
// trailers to its AdaptiveLoadBalanceFilter as the result's attachments:
//   - no call fails, and both providers are called;
//   - each Go provider answered exactly the calls it got from Java with a
//     report (counted on the Go side): every call asked;
//   - Java's AdaptiveMetrics recorded, for each provider, the load our
//     filter sent, the machine's load average × 100 / CPUs around the end
//     of the run (loadTolerance), at a curTime of that moment, and as
//     many successful calls as the provider answered.
//
// What it does not assert: a share of the calls. Java weighs providers by
// load × (√(RT average) + 1) × (calls in flight + 1); the load is the
// machine's, the same for every provider of one machine, so the report
// does not tell our providers apart here (see DESIGN.md of loadaware).
func TestProviderLoadJavaAdaptiveConsumerReadsOurReports(t *testing.T) {
	parallelJVM(t) // schedule_test.go
	e := setup(t)
	needJava(t)
	ps := e.startRegistered(t,
		providerSpec{name: "go1", latency: "5ms"},
		providerSpec{name: "go2", latency: "5ms"},
	)
	s, lo, hi := e.runJavaConsumer(t, "-providers", strconv.Itoa(len(ps)), "-callers", "4",
		"-calls", strconv.Itoa(javaAdaptiveCalls), "-timeout", "30s")
	end := time.Now()
	t.Logf("java consumer: %d calls in %.1f s, %d errors, by provider %v, mean ms %v; machine load at the end %.1f to %.1f",
		s.Calls, s.Seconds, s.Errors, s.By, s.MeanMs, lo, hi)
	if s.Errors != 0 || s.Calls != javaAdaptiveCalls {
		t.Errorf("java consumer: %d calls, %d failed (last: %s); want %d calls, none failed", s.Calls, s.Errors, s.LastError, javaAdaptiveCalls)
	}
	for _, p := range ps {
		addr := "127.0.0.1:" + strconv.Itoa(p.spec.port)
		got := s.By[p.spec.name]
		n := answered(t, p)
		a, ok := s.Adaptive[addr]
		t.Logf("%s: %d calls from Java, %d answered with a load report; Java recorded %+v", p.spec.name, got, n, a)
		if got == 0 {
			t.Errorf("%s: no call from the Java consumer", p.spec.name)
		}
		if n != got {
			t.Errorf("%s answered %d calls with a load report, got %d from the Java adaptive consumer: want every call to ask", p.spec.name, n, got)
		}
		if !ok {
			t.Errorf("%s: nothing in Java's AdaptiveMetrics (it has %v)", p.spec.name, s.Adaptive)
			continue
		}
		if a.Successes != got || a.Errors != 0 {
			t.Errorf("%s: Java's AdaptiveMetrics counts %d successes, %d errors; want %d, 0", p.spec.name, a.Successes, a.Errors, got)
		}
		if age := end.Sub(time.UnixMilli(a.CurTime)); a.CurTime == 0 || age < -time.Minute || age > time.Minute {
			t.Errorf("%s: Java recorded a report of curTime %d (%v before the end): want one from the end of the run", p.spec.name, a.CurTime, age)
		}
		if tol := loadTolerance(hi); a.Load < lo-tol || a.Load > hi+tol {
			t.Errorf("%s: Java recorded load %.1f; want the machine's, %.1f to %.1f ± %.1f", p.spec.name, a.Load, lo, hi, tol)
		}
	}
	if t.Failed() {
		t.Logf("summary: %+v", s)
	}
}
