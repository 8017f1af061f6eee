package it

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/extension"
)

// Outlier ejection end to end, for every balancer: one of five providers
// fails every call from when the test tells it to (a signal: the sample
// provider's -usr2-fails), once every consumer has found it, and recovers
// when the test tells it again: at least minSpell later, once every
// consumer whose balancer is blind to failures has ejected it (so that a
// busy machine's few calls still eject it). With retries: 0 each failure
// reaches the caller, and the callers' failures past the first 2 s are at
// most 1 % plus those that ejection needs (ejectionAllowance); the
// provider gets no call while it is ejected, and calls again once its
// ejection time is over.
//
// Times: the ejection lasts ejectionTime (outlier.base-ejection-time in the
// consumers' params, so the test stays short); the spell ends as soon as
// the blind consumers have ejected it, normally well within that, so it
// recovers while ejected and its return shows the ejection time, not its
// recovery.
func TestOutlierEjectionTakesAFailingProviderOutAndBack(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setup(t)
	const (
		ejectionTime = 20 * time.Second
		minSpell     = 8 * time.Second
		// The provider's own bound (-usr2-fails), past the test's wait for
		// the ejections (reactDeadline), so that the second SIGUSR2 ends
		// the spell rather than starting one.
		maxSpell = 2 * reactDeadline
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

	// The fifth provider starts healthy; once every consumer has found it
	// (the lag is measured, however long it is), SIGUSR2 makes it fail
	// (-usr2-fails), from the time it prints, until the next SIGUSR2.
	bad := e.startProvider(t, providerSpec{name: "bad", args: []string{"-usr2-fails", maxSpell.String()}})
	e.waitRegistered(t, append(healthy[:len(healthy):len(healthy)], bad)...)
	for _, c := range cs {
		c.finds(t, bad)
	}
	if err := bad.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatalf("SIGUSR2 to %s: %v", bad.name, err)
	}
	failAt, _ := failureSpell(t, bad)
	addr := "127.0.0.1:" + strconv.Itoa(bad.spec.port)
	ejectedLine := "provider " + addr + " ejected for " + ejectionTime.String()
	var blind []*consumer
	for _, c := range cs {
		if blindToFailures(c.balancer) {
			blind = append(blind, c)
		}
	}
	deadline := failAt.Add(reactDeadline)
	allEjected := func() bool {
		for _, c := range blind {
			if !strings.Contains(c.log.String(), ejectedLine) {
				return false
			}
		}
		return true
	}
	for time.Now().Before(failAt.Add(minSpell)) || !allEjected() {
		if time.Now().After(deadline) {
			break // each consumer's checks below say which did not eject
		}
		time.Sleep(100 * time.Millisecond) // polling other processes' output
	}
	if err := bad.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatalf("SIGUSR2 to %s: %v", bad.name, err)
	}
	recoverAt := recovery(t, bad)
	t.Logf("the provider fails from %s to %s", failAt.Format("15:04:05.000"), recoverAt.Format("15:04:05.000"))
	ejectedUntil := failAt.Add(ejectionTime) // at the earliest

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
		allowed := float64(during.Calls)/100 + ejectionAllowance
		switch {
		case during.Calls == 0:
			t.Errorf("%s: no call from 2 s after the failure began to its end", c.name)
		case float64(during.Errors) > allowed:
			t.Errorf("%s: %d of %d calls failed from 2 s after the provider began to fail, more than 1 %% + %d (%s)", c.name, during.Errors, during.Calls, ejectionAllowance, during.LastError)
		default:
			t.Logf("%s: %d of %d calls failed from 2 s after the provider began to fail (at most %.1f)", c.name, during.Errors, during.Calls, allowed)
		}

		// Ejected (the consumer says so) or not, it gets calls again once
		// recovered; ejected, not before the ejection time is over.
		ejected := strings.Contains(c.log.String(), ejectedLine)
		back := c.until(t, reactDeadline, "calling the recovered provider", func(r report) bool {
			if ejected && r.By["bad"] > 0 && r.end.Before(ejectedUntil) && r.start().After(recoverAt.Add(time.Second)) {
				t.Errorf("%s: the ejected provider answered %d calls from %s to %s, before its ejection of %v was over",
					c.name, r.By["bad"], r.start().Format("15:04:05.0"), r.end.Format("15:04:05.0"), ejectionTime)
			}
			return r.By["bad"] > 0 && r.start().After(recoverAt)
		})
		t.Logf("%s: ejected %v; the provider answered again from %s (%.1f s after it recovered)", c.name, ejected,
			back.start().Format("15:04:05.0"), back.start().Sub(recoverAt).Seconds())
		if blindToFailures(c.balancer) {
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

// blindToFailures reports whether balancer sends a failing provider its
// share of the calls whatever they answer, so that only ejection stops it.
func blindToFailures(balancer string) bool {
	switch balancer {
	case "warmrandom", "swrr", "ringhash", "consistenthash":
		return true
	}
	return false
}

// recoveryRe matches the line of a sample provider that ends a spell of
// failures on a second SIGUSR2.
var recoveryRe = regexp.MustCompile(`recovered at (\S+)`)

// recovery waits up to reactDeadline for p to print the end of its spell
// of failures that a second SIGUSR2 asked for, and returns its time.
func recovery(t *testing.T, p *provider) time.Time {
	t.Helper()
	deadline := time.Now().Add(reactDeadline)
	for {
		if m := recoveryRe.FindStringSubmatch(p.log.String()); m != nil {
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				t.Fatalf("%s: %q: %v", p.name, m[0], err)
			}
			return at
		}
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("%s did not recover within %v of the second SIGUSR2; log:\n%s", p.name, reactDeadline, tail(p.log.String(), 20))
		}
		time.Sleep(50 * time.Millisecond) // polling another process's output
	}
}

// ejectionAllowance is how many failures past the first 2 s of the spell
// TestOutlierEjection… allows beyond 1 % of the calls: those that the
// consecutive-failures rule needs to eject (5 in a row) and the calls in
// flight when it does (the consumers' 4). A balancer that avoids a failing
// provider by itself (rtadaptive's failure penalty) calls it seldom, so
// that its 5 failures in a row may take seconds (6 s in a CI run on a busy
// machine: 2 failures of 162 calls past the 2 s); a balancer blind to
// failures and not ejecting would fail a fifth of its calls (30 of 150).
const ejectionAllowance = 5 + 4

// failureRe matches the line of a sample provider that starts a spell of
// failures.
var failureRe = regexp.MustCompile(`failing every call with \S+ from (\S+), recovering at (\S+)`)

// failureSpell waits up to reactDeadline for p to print the spell of
// failures that a SIGUSR2 started, and returns its bounds.
func failureSpell(t *testing.T, p *provider) (from, until time.Time) {
	t.Helper()
	deadline := time.Now().Add(reactDeadline)
	for {
		if m := failureRe.FindStringSubmatch(p.log.String()); m != nil {
			from, err1 := time.Parse(time.RFC3339Nano, m[1])
			until, err2 := time.Parse(time.RFC3339Nano, m[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %q: %v %v", p.name, m[0], err1, err2)
			}
			return from, until
		}
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("%s did not start failing within %v of SIGUSR2; log:\n%s", p.name, reactDeadline, tail(p.log.String(), 20))
		}
		time.Sleep(50 * time.Millisecond) // polling another process's output
	}
}

// ejectionYAML writes a copy of conf/consumer.yaml with no retry (each
// failure reaches the caller) and outlier ejections of ejectionTime, in
// the reference's params, and returns its path.
//
// loadaware's reports expire after 10 s there, not 3 minutes: a provider
// reports its load only in the answers to calls, so the report it sent
// while failing (its error rate, which loadaware charges) stays in force
// while loadaware sends it nothing, until it expires. Seen in this test:
// once loadaware had ejected the provider, it did not call it again
// within 2 minutes of its recovery.
func ejectionYAML(t *testing.T, ejectionTime time.Duration) string {
	t.Helper()
	return editConsumerYAML(t, "        retries: 2\n",
		"        retries: 0\n        params:\n          outlier.base-ejection-time: "+ejectionTime.String()+
			"\n          loadaware.expiration: 10s\n", "consumer-ejection.yaml")
}
