package it

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// appService is the Nacos service of the sample provider's application,
// where application-level discovery registers it.
const appService = "dubbogo-lb-provider"

// registryLevel is how providers register and consumers find them.
type registryLevel struct {
	typ string // -registry-type of providers and consumers
	// service is the Nacos service whose instances the consumers use, and
	// so the one an operator edits: with all, the consumers' application
	// level (extension.PreferApplicationLevel).
	service string
}

var (
	interfaceLevel   = registryLevel{"interface", serviceName}
	applicationLevel = registryLevel{"service", appService}
	bothLevels       = registryLevel{"all", appService}
)

// startAt starts providers registering at lv, each once the ones before
// are registered (and at application level once the mapping names their
// application: startProvider), beside the running ones, and returns the
// instances of them all in lv's service.
func (e *env) startAt(t *testing.T, lv registryLevel, running []*provider, specs ...providerSpec) ([]*provider, []instance) {
	t.Helper()
	ps := running
	for _, s := range specs {
		s.args = append(s.args, "-registry-type", lv.typ)
		ps = append(ps, e.startProvider(t, s))
		e.waitRegisteredIn(t, lv.service, ps...)
	}
	if lv.typ == bothLevels.typ {
		e.waitRegisteredIn(t, serviceName, ps...)
	}
	return ps, e.waitRegisteredIn(t, lv.service, ps...)
}

// consumerAt starts a swrr consumer finding n providers at lv, paced
// (pacedArgs): its smooth cycle measures shares with the least noise.
func (e *env) consumerAt(t *testing.T, lv registryLevel, n int) *consumer {
	t.Helper()
	c := e.startConsumers(t, n, consumerSpec{balancer: "swrr", name: "consumer at " + lv.typ + " level", args: append([]string{"-registry-type", lv.typ}, pacedArgs...)})[0]
	return c
}

// providerParams returns the parameters a provider registered: at
// interface level its instance's metadata, at application level the
// service's parameters in its application's metadata, which the metadata
// report keeps in Nacos (data ID the application, group the revision).
func (e *env) providerParams(t *testing.T, lv registryLevel, in instance) map[string]string {
	t.Helper()
	if lv.service == serviceName {
		return in.Metadata
	}
	q := url.Values{"dataId": {appService}, "group": {in.Metadata["dubbo.metadata.revision"]}}
	resp, err := httpClient.Get("http://" + e.nacos + "/nacos/v1/cs/configs?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var meta struct {
		Services map[string]struct {
			Params map[string]string `json:"params"`
		} `json:"services"`
	}
	if err := json.Unmarshal(body, &meta); err != nil || len(meta.Services) != 1 {
		t.Fatalf("metadata of %s:%d (revision %q): %s: %v", in.IP, in.Port, q.Get("group"), body, err)
	}
	for _, s := range meta.Services {
		return s.Params
	}
	panic("unreachable")
}

// followed reads c's intervals from the first that starts after changed
// until their calls give provider a share significantly (zScore) above
// or below its old share, and logs how long that took.
func followed(t *testing.T, c *consumer, changed time.Time, provider string, old float64, up bool) {
	t.Helper()
	var since []report
	r := c.until(t, reactDeadline, fmt.Sprintf("following the change of %s's share from %.1f%%", provider, old), func(r report) bool {
		if !r.start().After(changed) {
			return false
		}
		since = append(since, r)
		m := merge(since)
		if up {
			return m.share(provider) > old+noise(old, successes(m))
		}
		return m.share(provider) < old-noise(old, successes(m))
	})
	t.Logf("%s: the share of %s changed within %v", c.name, provider, r.end.Sub(changed).Round(time.Second))
}

// starved reads c's intervals until one that starts after changed gives
// provider no call, then checks that n more calls give it none,
// and returns those calls. They are counted over the intervals in which
// every one of others answered (collectCallsTo): the shares among them
// assume that Nacos lists them all (seen: a busy Nacos lost the provider
// c, its keeper registered it again, and a measured 94 % of 2:1).
func starved(t *testing.T, c *consumer, changed time.Time, n int64, provider string, others ...string) report {
	t.Helper()
	r := c.until(t, reactDeadline, "giving "+provider+" no call", func(r report) bool {
		return r.start().After(changed) && r.By[provider] == 0 && successes(r) > 0
	})
	t.Logf("%s: no call to %s from %v after the change", c.name, provider, r.start().Sub(changed).Round(time.Second))
	m := c.collectCallsTo(t, n, others...)
	if n := m.By[provider]; n != 0 {
		t.Errorf("%s: %d of %d calls went to %s after it stopped getting any", c.name, n, successes(m), provider)
	}
	return m
}

// Weights (a fractional one too) reach the balancers the same way whether
// providers register at interface or at application level, and so does the
// warmup ramp (at interface level: TestWarmupRampsUpANewProvider).
func TestApplicationLevelWeightsAndWarmup(t *testing.T) {
	t.Parallel() // its subtests call parallel (schedule_test.go)
	for _, lv := range []registryLevel{interfaceLevel, applicationLevel} {
		t.Run(lv.typ, func(t *testing.T) {
			parallel(t)
			e := setup(t)
			ps, insts := e.startAt(t, lv, nil, providerSpec{name: "w1", weight: 1}, providerSpec{name: "w3", weight: 3})
			if p := e.providerParams(t, lv, insts[0]); p["weight"] != "1" {
				t.Fatalf("w1 registered weight %q, want 1", p["weight"])
			}
			c := e.consumerAt(t, lv, 2)
			c.until(t, reactDeadline, "reaching both providers", func(r report) bool { return all(r, "w1", "w3") })
			shareOf(t, "share of weight 1 of 1:3", c.collectCallsTo(t, shareCalls, "w1", "w3"), "w1", 25)

			// A fractional weight: w3's instance weight halved in the
			// console makes it 1.5, neither 1 nor 2.
			changed := time.Now()
			e.console(t, lv.service, insts[1], insts[1].Weight/2, true)
			followed(t, c, changed, "w1", 25, true)
			shareOf(t, "share of weight 1 of 1:1.5", c.collectCallsTo(t, shareCalls, "w1", "w3"), "w1", 40)

			// At interface level the ramp is TestWarmupRampsUpANewProvider's
			// (two balancers, the metadata's timestamp and warmup): 90 s of
			// calls here would prove it again.
			if lv == interfaceLevel {
				noErrors(t, c, c.finish(t))
				return
			}
			// A new provider of weight 10 ramps up along the warmup its
			// registered timestamp and warmup describe. Its share once warm
			// (80 %) is close to where the ramp is when a busy machine
			// lets the consumer find it late: found 10.6 s into 30 s, the
			// first window of 405 calls was 62 % ± 12.5 and the rest came
			// closer still, so no window told the ramp from full weight;
			// found 33.7 s into 60 s (it registered that late), none did
			// either. The Java tests' warmup (javaWarmup, 90 s) has the
			// same reason: found as late in it, the first windows are near
			// 60 %.
			const warmup = javaWarmup
			var withNew []*provider
			withNew, insts = e.startAt(t, lv, ps, providerSpec{name: "new", weight: 10, warmup: warmup})
			p := e.providerParams(t, lv, insts[2])
			ts, err := strconv.ParseInt(p["timestamp"], 10, 64)
			if err != nil || p["warmup"] != strconv.Itoa(int(warmup.Seconds())) || p["weight"] != "10" {
				t.Fatalf("new provider's parameters %v: want a timestamp in Unix seconds, warmup %v, weight 10", p, warmup)
			}
			// Its share beside w1 and w3 (1 + 1.5): Dubbo's linear ramp
			// from its timestamp, at least one weight unit.
			checkRamp(t, c, withNew[2], time.Unix(ts, 0), warmup, 10, 2.5)
			noErrors(t, c, c.finish(t))
		})
	}
}

// consoleCalls is the number of calls each share of
// TestNacosConsoleOperations is measured on. Its swrr consumer's shares
// follow a fixed cycle, and each check tells shares 17 points or more
// apart, against a tolerance of at most 7.1 points at 1 000 calls
// (noise); shareCalls' 3 000 would triple the calls of a test that checks
// that an edit arrives, not how exactly it splits.
const consoleCalls = 1000

// What an operator does in the Nacos console reaches the balancers within
// seconds, at interface level, at application level, and with both (the
// consumers then use the application level): an instance's weight
// doubled, an instance disabled and enabled again, an instance drained
// (weight 0); no call fails throughout.
func TestNacosConsoleOperations(t *testing.T) {
	t.Parallel() // its subtests call parallel (schedule_test.go)
	for _, lv := range []registryLevel{interfaceLevel, applicationLevel, bothLevels} {
		t.Run(lv.typ, func(t *testing.T) {
			parallel(t)
			e := setup(t)
			_, insts := e.startAt(t, lv, nil, providerSpec{name: "a"}, providerSpec{name: "b"}, providerSpec{name: "c"})
			a, b, cc := insts[0], insts[1], insts[2]
			c := e.consumerAt(t, lv, 3)
			c.until(t, reactDeadline, "reaching every provider", func(r report) bool { return all(r, "a", "b", "c") })
			shareOf(t, "share of a, all equal", c.collectCallsTo(t, consoleCalls, "a", "b", "c"), "a", 100.0/3)

			// Double a's weight.
			changed := time.Now()
			e.console(t, lv.service, a, 2*a.Weight, true)
			followed(t, c, changed, "a", 100.0/3, true)
			m := c.collectCallsTo(t, consoleCalls, "a", "b", "c")
			shareOf(t, "share of a, weight doubled (2:1:1)", m, "a", 50)
			shareOf(t, "share of b, a's weight doubled (2:1:1)", m, "b", 25)

			// Disable b: no call to it; a gets 2/3.
			changed = time.Now()
			e.console(t, lv.service, b, b.Weight, false)
			shareOf(t, "share of a, b disabled (2:1)", starved(t, c, changed, consoleCalls, "b", "a", "c"), "a", 200.0/3)

			// Enable b again: its share comes back.
			changed = time.Now()
			e.console(t, lv.service, b, b.Weight, true)
			c.until(t, reactDeadline, "calling b again", func(r report) bool { return r.start().After(changed) && r.By["b"] > 0 })
			shareOf(t, "share of b, enabled again (2:1:1)", c.collectCallsTo(t, consoleCalls, "a", "b", "c"), "b", 25)

			// Drain c: weight 0.
			changed = time.Now()
			e.console(t, lv.service, cc, 0, true)
			shareOf(t, "share of a, c drained (2:1)", starved(t, c, changed, consoleCalls, "c", "a", "b"), "a", 200.0/3)

			noErrors(t, c, c.finish(t))
		})
	}
}
