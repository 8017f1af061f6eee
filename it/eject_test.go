package it

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/extension"
)

// Outlier ejection end to end, for every balancer: one of five providers
// fails every call from a given time (the sample provider's -fail-at) and
// recovers a few seconds later (-recover-at). With retries: 0 each failure
// reaches the caller, and the callers' failures fall to at most 1 % within
// 2 s; the provider gets no call while it is ejected, and calls again once
// its ejection time is over.
//
// Times: the ejection lasts ejectionTime (outlier.base-ejection-time in the
// consumers' params, so the test stays short); the provider fails for
// failSpell, less than that, so it recovers while ejected and its return
// shows the ejection time, not its recovery.
func TestOutlierEjectionTakesAFailingProviderOutAndBack(t *testing.T) {
	t.Parallel() // harness_test.go: which tests run alone
	e := setup(t)
	const (
		ejectionTime = 20 * time.Second
		failSpell    = 8 * time.Second
	)
	var healthy []*provider
	for i := range 4 {
		healthy = append(healthy, e.startProvider(t, providerSpec{name: fmt.Sprintf("ok%d", i+1)}))
	}
	e.waitRegistered(t, healthy...)
	conf := ejectionYAML(t, ejectionTime)
	cs := e.startConsumers(t, 4, specsFor(extension.Balancers(), "-conf", conf)...)
	for _, c := range cs {
		c.until(t, reactDeadline, "reaching the four providers", func(r report) bool { return all(r, "ok1", "ok2", "ok3", "ok4") })
	}

	// The fifth provider starts healthy and fails from failAt: every
	// consumer must have found it before. Finding it takes a second or two
	// on an idle machine; should a busy one take longer than the lead,
	// the provider is started again with twice the lead (a fresh
	// registration, before any failure).
	port := freePort(t)
	var bad *provider
	var failAt, recoverAt time.Time
	for attempt, lead := 1, 20*time.Second; ; attempt, lead = attempt+1, 2*lead {
		failAt = time.Now().Add(lead)
		recoverAt = failAt.Add(failSpell)
		bad = e.startProvider(t, providerSpec{name: "bad", port: port, args: []string{
			"-fail-at", failAt.Format(time.RFC3339Nano), "-recover-at", recoverAt.Format(time.RFC3339Nano)}})
		e.waitRegistered(t, append(healthy[:len(healthy):len(healthy)], bad)...)
		late := ""
		for _, c := range cs {
			if !c.reachesBefore("bad", failAt.Add(-time.Second)) {
				late = c.name
				break
			}
		}
		if late == "" {
			break
		}
		if attempt == 3 {
			t.Fatalf("%s did not find the new provider within %v, three times: the machine is too busy for this test", late, lead)
		}
		t.Logf("%s did not find the new provider within %v; starting it again with a lead of %v", late, lead, 2*lead)
		bad.stop()
		e.waitRegistered(t, healthy...)
	}
	t.Logf("the provider fails from %s to %s", failAt.Format("15:04:05.000"), recoverAt.Format("15:04:05.000"))
	ejectedUntil := failAt.Add(ejectionTime) // at the earliest
	addr := "127.0.0.1:" + strconv.Itoa(port)

	for _, c := range cs {
		// While it fails, from 2 s after it started: failures at most 1 %.
		var during report
		var rs []report
		for {
			r := c.next(t, reportTimeout)
			if r.end.After(recoverAt) {
				break
			}
			if !r.start().Before(failAt.Add(2 * time.Second)) {
				rs = append(rs, r)
			}
		}
		during = merge(rs)
		switch {
		case during.Calls == 0:
			t.Errorf("%s: no call from 2 s after the failure began to its end", c.name)
		case 100*float64(during.Errors) > float64(during.Calls):
			t.Errorf("%s: %d of %d calls failed from 2 s after the provider began to fail, more than 1 %% (%s)", c.name, during.Errors, during.Calls, during.LastError)
		default:
			t.Logf("%s: %d of %d calls failed from 2 s after the provider began to fail", c.name, during.Errors, during.Calls)
		}

		// Ejected (the consumer says so) or not, it gets calls again once
		// recovered; ejected, not before the ejection time is over.
		ejected := strings.Contains(c.log.String(), "provider "+addr+" ejected for "+ejectionTime.String())
		back := c.until(t, reactDeadline, "calling the recovered provider", func(r report) bool {
			if ejected && r.By["bad"] > 0 && r.end.Before(ejectedUntil) && r.start().After(recoverAt.Add(time.Second)) {
				t.Errorf("%s: the ejected provider answered %d calls from %s to %s, before its ejection of %v was over",
					c.name, r.By["bad"], r.start().Format("15:04:05.0"), r.end.Format("15:04:05.0"), ejectionTime)
			}
			return r.By["bad"] > 0 && r.start().After(recoverAt)
		})
		t.Logf("%s: ejected %v; the provider answered again from %s (%.1f s after it recovered)", c.name, ejected,
			back.start().Format("15:04:05.0"), back.start().Sub(recoverAt).Seconds())
		switch c.balancer {
		case "warmrandom", "swrr", "ringhash":
			// Blind to failures on their own: only ejection stops them.
			if !ejected {
				t.Errorf("%s: no line of the consumer says the provider was ejected for %v", c.name, ejectionTime)
			} else if back.end.Before(ejectedUntil) {
				t.Errorf("%s: the provider answered again before its ejection was over", c.name)
			}
			if !strings.Contains(c.log.String(), "provider "+addr+" returns after") {
				t.Errorf("%s: no line of the consumer says the provider returned", c.name)
			}
		}
	}
	for _, c := range cs {
		c.finish(t)
	}
}

// reachesBefore reads the consumer's reports until one counts a successful
// call of provider, and reports whether that happened before deadline.
func (c *consumer) reachesBefore(provider string, deadline time.Time) bool {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		select {
		case r, ok := <-c.intervals:
			if !ok {
				return false
			}
			if r.By[provider] > 0 {
				return true
			}
		case <-time.After(left):
			return false
		}
	}
}

// ejectionYAML writes a copy of conf/consumer.yaml with no retry (each
// failure reaches the caller) and outlier ejections of ejectionTime, in
// the reference's params, and returns its path.
func ejectionYAML(t *testing.T, ejectionTime time.Duration) string {
	t.Helper()
	return editConsumerYAML(t, "        retries: 2\n",
		"        retries: 0\n        params:\n          outlier.base-ejection-time: "+ejectionTime.String()+"\n", "consumer-ejection.yaml")
}
