package it

import (
	"context"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProviderRegistersAgainAfterItsNacosClientLostTheRegistration: a
// provider whose Nacos instance disappears from the server behind its
// client's back (the client forgets it too, as after the reconnect race of
// nacos-sdk-go, see extension/internal/nacoskeeper) is registered again by
// the keeper of extension.KeepRegistered, in the same process, with one
// WARN line per level, as it was registered (every metadata key and the
// weight as before): at interface level with dubbo-go's same URL, at
// application level (registry-type service, and all: both levels at once)
// through our service discovery's same client and batch. A provider
// without the keeper stays lost, so the client does not put it back by
// itself. A consumer of both and of a third provider at that level loses
// no call, and calls the kept one again once it is back.
//
// Nacos 3.1.0 does not let the Open API remove a gRPC client's ephemeral
// instance (DELETE /nacos/v1/ns/instance, v2 and v3 admin: "ok", and the
// instance stays), so the provider withdraws its instances itself through
// its own pooled Nacos client on SIGUSR1 (-usr1-loses-registration).
func TestProviderRegistersAgainAfterItsNacosClientLostTheRegistration(t *testing.T) {
	t.Parallel() // its subtests call parallel (schedule_test.go)
	for _, lv := range []registryLevel{interfaceLevel, applicationLevel, bothLevels} {
		t.Run(lv.typ, func(t *testing.T) {
			parallel(t)
			testRegistersAgain(t, lv)
		})
	}
}

func testRegistersAgain(t *testing.T, lv registryLevel) {
	e := setup(t)
	// The Nacos services the providers register in: with all, both.
	services := []string{lv.service}
	if lv.typ == bothLevels.typ {
		services = append(services, serviceName)
	}
	// A third provider keeps its registration throughout: the fault is one
	// provider's client losing its own, and the consumer is never left
	// with none (Nacos's empty list would then fail calls for the seconds
	// the repair takes).
	ps, _ := e.startAt(t, lv, nil,
		providerSpec{name: "k1", args: []string{"-keep-interval", "1s", "-usr1-loses-registration"}},
		providerSpec{name: "k2", args: []string{"-keep-interval", "0", "-usr1-loses-registration"}},
		providerSpec{name: "s"})
	kept, bare := ps[0], ps[1]
	before := map[string]instance{}
	for _, s := range services {
		before[s] = e.waitRegisteredIn(t, s, ps...)[0]
	}
	c := e.consumerAt(t, lv, len(ps))
	c.until(t, reactDeadline, "calling every provider", func(r report) bool { return all(r, "k1", "k2", "s") })

	lost := time.Now()
	for _, p := range []*provider{kept, bare} {
		if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*provider{kept, bare} {
		for _, s := range services {
			waitLog(t, p, regexp.MustCompile(`lose registration: withdrew \S+ of `+regexp.QuoteMeta(s)+` from Nacos group \S+ behind dubbo-go's back: true <nil>`))
		}
	}
	for _, s := range services {
		// The provider without a keeper is gone, and stays gone.
		e.waitInstancesOf(t, s, reactDeadline, "without the provider that has no keeper in "+s, func(list []instance) bool {
			return !hasPort(list, bare.spec.port)
		})
		// The kept one comes back: first it must have been missing on two
		// reads a second apart, so it was gone too.
		back := e.waitInstancesOf(t, s, reactDeadline, "with the kept provider again in "+s, func(list []instance) bool {
			return hasPort(list, kept.spec.port)
		})
		t.Logf("%s: the kept provider was registered again %v after the loss", s, time.Since(lost).Round(100*time.Millisecond))
		var again instance
		for _, in := range back {
			if in.Port == kept.spec.port {
				again = in
			}
		}
		if want := before[s]; !maps.Equal(again.Metadata, want.Metadata) || again.Weight != want.Weight {
			t.Errorf("%s: registered again with weight %v, metadata\n%v\nwant the first registration's: weight %v, metadata\n%v",
				s, again.Weight, again.Metadata, want.Weight, want.Metadata)
		}
		if pid, ok := again.Metadata["pid"]; s == serviceName && (!ok || pid != strconv.Itoa(kept.cmd.Process.Pid)) {
			t.Errorf("registered again by pid %s; want the running provider's %d", pid, kept.cmd.Process.Pid)
		}
	}
	if kept.exited() {
		t.Fatalf("the kept provider exited: %v", kept.err)
	}
	repairs := regexp.MustCompile(`keeper: registered 127\.0\.0\.1:` + strconv.Itoa(kept.spec.port) + ` again`)
	if n := len(repairs.FindAllString(kept.log.String(), -1)); n != len(services) {
		t.Errorf("%d WARN lines of a repair in the kept provider's log; want %d, one per Nacos service", n, len(services))
	}
	back := time.Now()
	c.until(t, reactDeadline, "calling the kept provider again", func(r report) bool { return r.start().After(back) && r.By["k1"] > 0 })
	// Nacos-sdk-go's redo task runs every 3 s: over 10 s it would have put
	// the other one back if it could.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range services {
			list, err := e.instancesOf(context.Background(), s)
			if err == nil && hasPort(list, bare.spec.port) {
				t.Fatalf("the provider without a keeper came back by itself in %s: the test does not tell the keeper's work", s)
			}
		}
		time.Sleep(500 * time.Millisecond) // polling Nacos
	}
	if strings.Contains(bare.log.String(), "keeper:") {
		t.Errorf("the provider with -keep-interval 0 ran a keeper:\n%s", tail(bare.log.String(), 5))
	}
	noErrors(t, c, c.finish(t))
}

func hasPort(list []instance, port int) bool {
	for _, in := range list {
		if in.Port == port {
			return true
		}
	}
	return false
}

// waitLog waits until p's output matches re.
func waitLog(t *testing.T, p *provider, re *regexp.Regexp) {
	t.Helper()
	deadline := time.Now().Add(reactDeadline)
	for !re.MatchString(p.log.String()) {
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("%s: no line matching %q after %v:\n%s", p.name, re, reactDeadline, tail(p.log.String(), 10))
		}
		time.Sleep(50 * time.Millisecond) // polling the log
	}
}
