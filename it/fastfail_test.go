package it

import (
	"fmt"
	"math"
	"strconv"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/dubbogo-lb/lb/extension"
)

// TestFastFailuresAreAvoided: three of six providers fail every call at
// once from their start (-fail-at 0s), more than outlier ejection may take
// out at its defaults (at most 10 % of the providers, and one). A consumer
// per balancer of the module, and dubbo-go's random as the control, each
// make the same number of calls through the failover cluster with its
// default retries (2). Every balancer's failed calls (after retries) and
// retries are fewer than random's.
//
// The consumer's report (callstats.Stats) counts calls and the calls that
// failed after their retries, not the attempts. The failed attempts are
// read from dubbo-go's own metrics on the consumer's Prometheus endpoint
// (-metrics), scraped once the run is over (-pause): dubbo-go's metrics
// filter wraps each provider's invoker, below the failover cluster, so its
// requests_failed_total counts every failed attempt. A failed attempt is
// either retried or its call's last, so retries = failed attempts − failed
// calls.
func TestFastFailuresAreAvoided(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setup(t)
	const calls = 1000
	var specs []providerSpec
	for i := range 3 {
		specs = append(specs, providerSpec{name: fmt.Sprintf("ok%d", i+1)},
			providerSpec{name: fmt.Sprintf("bad%d", i+1), args: []string{"-fail-at", "0s"}})
	}
	e.startRegistered(t, specs...)
	type run struct {
		c       *consumer
		metrics string
	}
	names := append([]string{"random"}, extension.Balancers()...)
	runs := make([]run, len(names))
	for i, b := range names {
		m := strconv.Itoa(freePort(t))
		// Three providers answer: the consumer starts once it has them.
		runs[i] = run{e.startPausedConsumer(t, b, 3, "-metrics", m, "-duration", "0", "-calls", fmt.Sprint(calls)), m}
	}
	for _, r := range runs {
		if err := r.c.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	type outcome struct{ calls, failed, retries int64 }
	got := make([]outcome, len(runs))
	for i, r := range runs {
		var total report
		select {
		case total = <-r.c.total:
		case <-time.After(5 * time.Minute): // a run of seconds, on a machine however busy
			t.Fatalf("%s: no totals within 5 min; log:\n%s", r.c.name, tail(r.c.log.String(), 30))
		}
		r.c.waitLog(t, pausedAfter)
		attempts := failedAttempts(scrape(t, r.metrics))
		got[i] = outcome{total.Calls, total.Errors, attempts - total.Errors}
		t.Logf("%s: %d calls, %d failed after retries, %d failed attempts, %d retries", names[i], total.Calls, total.Errors, attempts, got[i].retries)
		if total.Calls < calls || got[i].retries < 0 {
			t.Errorf("%s: %d calls and %d failed attempts of %d failed calls: the count is wrong", names[i], total.Calls, attempts, total.Errors)
		}
	}
	control := got[0]
	if control.retries == 0 || control.failed == 0 {
		t.Fatalf("random: %d failed calls, %d retries: the control proves nothing", control.failed, control.retries)
	}
	for i, o := range got[1:] {
		name := names[i+1]
		if o.failed >= control.failed || o.retries >= control.retries {
			t.Errorf("%s: %d failed calls and %d retries, want fewer than random's %d and %d", name, o.failed, o.retries, control.failed, control.retries)
		}
	}
}

// failedAttempts returns the attempts that failed, by dubbo-go's metrics
// in mfs: requests_failed_total, filed under dubbo_consumer_ or (for
// providers found through interface-level Nacos, see checkLabels)
// dubbo_provider_, summed over its series.
func failedAttempts(mfs map[string]*dto.MetricFamily) int64 {
	var sum float64
	for _, name := range []string{"dubbo_consumer_requests_failed_total", "dubbo_provider_requests_failed_total"} {
		for _, m := range mfs[name].GetMetric() {
			if v := m.GetCounter().GetValue(); !math.IsNaN(v) {
				sum += v
			}
		}
	}
	return int64(sum)
}
