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
// the keeper of extension.KeepRegistered, with dubbo-go's same URL (every
// metadata key and the weight as before), in the same process, with one
// WARN line; a provider without the keeper stays lost, so the client does
// not put it back by itself.
//
// Nacos 3.1.0 does not let the Open API remove a gRPC client's ephemeral
// instance (DELETE /nacos/v1/ns/instance, v2 and v3 admin: "ok", and the
// instance stays), so the provider withdraws it itself through its own
// pooled Nacos client on SIGUSR1 (-usr1-loses-registration).
func TestProviderRegistersAgainAfterItsNacosClientLostTheRegistration(t *testing.T) {
	t.Parallel() // harness_test.go: which tests run alone
	e := setup(t)
	kept := e.startProvider(t, providerSpec{name: "k1", args: []string{"-keep-interval", "1s", "-usr1-loses-registration"}})
	bare := e.startProvider(t, providerSpec{name: "k2", args: []string{"-keep-interval", "0", "-usr1-loses-registration"}})
	before := e.waitRegistered(t, kept, bare)

	lost := time.Now()
	for _, p := range []*provider{kept, bare} {
		if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*provider{kept, bare} {
		waitLog(t, p, regexp.MustCompile(`lose registration: withdrew \S+ from Nacos group \S+ behind dubbo-go's back: true <nil>`))
	}
	// The provider without a keeper is gone, and stays gone.
	e.waitInstances(t, reactDeadline, "without the provider that has no keeper", func(list []instance) bool {
		return !hasPort(list, bare.spec.port)
	})
	// The kept one comes back: first it must have been missing on two
	// reads a second apart, so it was gone too.
	back := e.waitInstances(t, reactDeadline, "with the kept provider again", func(list []instance) bool {
		return hasPort(list, kept.spec.port)
	})
	t.Logf("the kept provider was registered again %v after the loss", time.Since(lost).Round(100*time.Millisecond))
	if kept.exited() {
		t.Fatalf("the kept provider exited: %v", kept.err)
	}
	var again instance
	for _, in := range back {
		if in.Port == kept.spec.port {
			again = in
		}
	}
	if !maps.Equal(again.Metadata, before[0].Metadata) || again.Weight != before[0].Weight {
		t.Errorf("registered again with weight %v, metadata\n%v\nwant dubbo-go's first registration: weight %v, metadata\n%v",
			again.Weight, again.Metadata, before[0].Weight, before[0].Metadata)
	}
	if pid := again.Metadata["pid"]; pid != strconv.Itoa(kept.cmd.Process.Pid) {
		t.Errorf("registered again by pid %s; want the running provider's %d", pid, kept.cmd.Process.Pid)
	}
	repairs := regexp.MustCompile(`keeper: registered 127\.0\.0\.1:` + strconv.Itoa(kept.spec.port) + ` again`)
	if n := len(repairs.FindAllString(kept.log.String(), -1)); n != 1 {
		t.Errorf("%d WARN lines of a repair in the kept provider's log; want 1", n)
	}
	// Nacos-sdk-go's redo task runs every 3 s: over 10 s it would have put
	// the other one back if it could.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, err := e.instances(context.Background())
		if err == nil && hasPort(list, bare.spec.port) {
			t.Fatalf("the provider without a keeper came back by itself: the test does not tell the keeper's work")
		}
		time.Sleep(500 * time.Millisecond) // polling Nacos
	}
	if strings.Contains(bare.log.String(), "keeper:") {
		t.Errorf("the provider with -keep-interval 0 ran a keeper:\n%s", tail(bare.log.String(), 5))
	}
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
