package keeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/extension/internal/keeper/keepertest"
)

// fakeServer holds instances by service and group; down makes it not answer.
type fakeServer struct {
	mu    sync.Mutex
	addrs map[string][]string // by service+"/"+group
	down  bool
	reads int
}

func newFakeServer() *fakeServer { return &fakeServer{addrs: map[string][]string{}} }

func (s *fakeServer) Addrs(service, group string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.down {
		return nil, errors.New("connection refused")
	}
	return append([]string(nil), s.addrs[service+"/"+group]...), nil
}

func (s *fakeServer) set(service, group string, addrs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addrs[service+"/"+group] = addrs
}

func (s *fakeServer) add(service, group, addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addrs[service+"/"+group] = append(s.addrs[service+"/"+group], addr)
}

func (s *fakeServer) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *fakeServer) has(service, group, addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.addrs[service+"/"+group] {
		if a == addr {
			return true
		}
	}
	return false
}

// fakeProcess is what a provider registered: one instance per service; it
// registers into the fake server and withdraws as a graceful shutdown does.
type fakeProcess struct {
	server    *fakeServer
	addr      string
	services  []string
	mu        sync.Mutex
	withdrawn bool
	registers int
	fail      error // Register's error when set
}

func (p *fakeProcess) Kept() []Registration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.withdrawn {
		return nil
	}
	var out []Registration
	for _, svc := range p.services {
		out = append(out, Registration{
			ID: svc, Server: p.server, Service: svc, Group: "G", Addr: p.addr,
			Register: func() error { return p.register(svc) },
		})
	}
	return out
}

func (p *fakeProcess) register(svc string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.withdrawn {
		return errors.New("withdrawn")
	}
	if p.fail != nil {
		return p.fail
	}
	p.registers++
	p.server.add(svc, "G", p.addr)
	return nil
}

func (p *fakeProcess) withdraw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.withdrawn = true
	for _, svc := range p.services {
		p.server.set(svc, "G")
	}
}

func (p *fakeProcess) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.registers
}

// logLines collects Warnf lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) warnf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func setup(services ...string) (*fakeServer, *fakeProcess, *logLines, *Keeper) {
	srv := newFakeServer()
	p := &fakeProcess{server: srv, addr: "10.0.0.1:20000", services: services}
	for _, svc := range services {
		srv.set(svc, "G", "10.0.0.2:20000", p.addr)
	}
	logs := &logLines{}
	return srv, p, logs, New(p, Options{Warnf: logs.warnf})
}

func TestKeeperLeavesAPresentInstanceAlone(t *testing.T) {
	_, p, logs, k := setup("a", "b")
	for i := 0; i < 5; i++ {
		if n := k.Check(); n != 0 {
			t.Fatalf("check %d registered %d", i, n)
		}
	}
	if p.count() != 0 || len(logs.get()) != 0 {
		t.Fatalf("registers %d, logs %q; want none", p.count(), logs.get())
	}
}

func TestKeeperWaitsForASecondMissBeforeRegistering(t *testing.T) {
	srv, p, logs, k := setup("a", "b")
	srv.set("a", "G", "10.0.0.2:20000") // lost behind the client's back
	if n := k.Check(); n != 0 || p.count() != 0 {
		t.Fatalf("first miss: registered %d (%d); want nothing yet", n, p.count())
	}
	if n := k.Check(); n != 1 || p.count() != 1 {
		t.Fatalf("second miss: registered %d (%d); want 1", n, p.count())
	}
	if !srv.has("a", "G", p.addr) || !srv.has("b", "G", p.addr) {
		t.Fatal("the instance is not back")
	}
	lines := logs.get()
	if len(lines) != 1 || !strings.Contains(lines[0], "registered 10.0.0.1:20000 again in a") {
		t.Fatalf("logs %q; want one line for the repair", lines)
	}
	// Back: nothing more.
	for i := 0; i < 3; i++ {
		k.Check()
	}
	if p.count() != 1 || len(logs.get()) != 1 {
		t.Fatalf("after the repair: %d registers, logs %q", p.count(), logs.get())
	}
}

func TestKeeperMissesMustBeInARow(t *testing.T) {
	srv, p, _, k := setup("a")
	for i := 0; i < 4; i++ {
		srv.set("a", "G") // missing...
		k.Check()
		srv.set("a", "G", p.addr) // ...then back (a lagging view)
		k.Check()
	}
	if p.count() != 0 {
		t.Fatalf("registered %d times on misses never two in a row", p.count())
	}
}

func TestKeeperDoesNothingWhileTheServerIsDown(t *testing.T) {
	srv, p, logs, k := setup("a")
	srv.set("a", "G")
	k.Check() // one miss
	srv.setDown(true)
	for i := 0; i < 5; i++ {
		k.Check()
	}
	if p.count() != 0 || len(logs.get()) != 0 {
		t.Fatalf("server down: %d registers, logs %q", p.count(), logs.get())
	}
	// Up again, still without it: a failed read started the count again.
	srv.setDown(false)
	if k.Check(); p.count() != 0 {
		t.Fatal("registered on the first read after the server came back")
	}
	if k.Check(); p.count() != 1 {
		t.Fatalf("registers %d after two misses with the server up; want 1", p.count())
	}
}

func TestKeeperNeverRegistersAfterItsOwnUnregister(t *testing.T) {
	srv, p, _, k := setup("a")
	srv.set("a", "G")
	k.Check() // one miss
	p.withdraw()
	for i := 0; i < 5; i++ {
		k.Check()
	}
	if p.count() != 0 || srv.has("a", "G", p.addr) {
		t.Fatalf("registered %d times after the provider unregistered", p.count())
	}
}

// A registration withdrawn between Kept and Register: Register refuses,
// and the keeper logs it without registering.
func TestKeeperWithdrawnDuringACheckIsNotRegistered(t *testing.T) {
	srv, p, logs, k := setup("a")
	srv.set("a", "G")
	k.Check()
	kept := p.Kept()
	p.withdraw()
	k.src = sourceFunc(func() []Registration { return kept })
	if n := k.Check(); n != 0 || p.count() != 0 || srv.has("a", "G", p.addr) {
		t.Fatalf("registered %d after the withdrawal", n)
	}
	if lines := logs.get(); len(lines) != 1 || !strings.Contains(lines[0], "failed: withdrawn") {
		t.Fatalf("logs %q; want the failed repair", lines)
	}
}

type sourceFunc func() []Registration

func (f sourceFunc) Kept() []Registration { return f() }

func TestKeeperRetriesAFailedRegister(t *testing.T) {
	srv, p, logs, k := setup("a")
	srv.set("a", "G")
	p.fail = errors.New("request timeout")
	k.Check()
	k.Check()
	k.Check()
	if p.count() != 0 || len(logs.get()) != 2 {
		t.Fatalf("failing register: %d registers, logs %q; want 0 and 2 lines", p.count(), logs.get())
	}
	p.mu.Lock()
	p.fail = nil
	p.mu.Unlock()
	if n := k.Check(); n != 1 || !srv.has("a", "G", p.addr) {
		t.Fatalf("register works again: repaired %d", n)
	}
}

func TestKeeperMissesOption(t *testing.T) {
	srv, p, _, _ := setup("a")
	k := New(p, Options{Misses: 3, Warnf: func(string, ...any) {}})
	srv.set("a", "G")
	k.Check()
	k.Check()
	if p.count() != 0 {
		t.Fatal("registered after 2 misses with Misses 3")
	}
	if k.Check(); p.count() != 1 {
		t.Fatal("not registered after 3 misses with Misses 3")
	}
}

func TestKeeperSkipsIncompleteRegistrations(t *testing.T) {
	srv := newFakeServer()
	k := New(sourceFunc(func() []Registration {
		return []Registration{{ID: "x", Service: "a", Addr: "h:1"}, {ID: "y", Server: srv, Service: "a", Addr: "h:1"}}
	}), Options{Misses: 1, Warnf: func(string, ...any) {}})
	if n := k.Check(); n != 0 || srv.reads != 0 {
		t.Fatalf("repaired %d, reads %d; want 0 and 0 (no Server, no Register: skipped)", n, srv.reads)
	}
}

func TestNewDefaults(t *testing.T) {
	k := New(sourceFunc(func() []Registration { return nil }), Options{Interval: -1, Misses: -5})
	if k.interval != DefaultInterval || k.misses != DefaultMisses || k.clock == nil || k.warnf == nil {
		t.Fatalf("defaults: %v %d", k.interval, k.misses)
	}
}

func TestRunChecksEveryIntervalAndStops(t *testing.T) {
	srv, p, _, _ := setup("a")
	clock := keepertest.NewClock()
	k := New(p, Options{Interval: 7 * time.Second, Clock: clock, Warnf: func(string, ...any) {}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()

	srv.set("a", "G")
	for i := 0; i < 2; i++ {
		if d := <-clock.Waits; d != 7*time.Second {
			t.Fatalf("waits %v; want the interval", d)
		}
		if p.count() != 0 {
			t.Fatal("registered before two reads")
		}
		clock.Fire <- time.Time{}
	}
	<-clock.Waits // the check after the second tick is done
	if p.count() != 1 {
		t.Fatalf("registers %d after two ticks; want 1", p.count())
	}
	cancel()
	<-done
	if srv.reads != 2 {
		t.Fatalf("reads %d; want 2", srv.reads)
	}
}
