// Package keeper keeps a process's registrations in a service registry: it
// reads, every interval, what the registry server holds, and registers an
// instance again when the server answers without it on Options.Misses reads
// in a row. It is the pure core of the provider-side registration keeper
// (extension.KeepRegistered); it knows nothing of dubbo-go or Nacos: the
// caller says what to keep (Source), how to read the server (Server) and
// how to register again (Registration.Register).
//
// Why: a registry client can lose a registration for good while its
// process keeps running (nacos-sdk-go v2.2.5 after a Nacos restart, see
// DESIGN.md); the server then lacks the instance and the client believes
// it registered.
package keeper

import (
	"context"
	"log"
	"slices"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultInterval = 10 * time.Second
	DefaultMisses   = 2
)

// Options tune a Keeper. The zero value is valid.
type Options struct {
	// Interval between two reads of the server (DefaultInterval when not
	// positive). The first read comes one interval after Run starts.
	Interval time.Duration
	// Misses is how many reads in a row must answer without an instance
	// before it is registered again (DefaultMisses when below 1). A read
	// that fails (the server did not answer) starts the count again, so a
	// server restart in progress, or a view that lags one read behind,
	// never registers anything twice.
	Misses int
	// Clock times the reads (the real clock when nil).
	Clock Clock
	// Warnf logs one line per repair and per failed repair (log.Printf
	// when nil).
	Warnf func(format string, args ...any)
}

// Clock is the time source of Run.
type Clock interface {
	// After sends on the channel it returns once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Server reads a registry server.
type Server interface {
	// Addrs returns the host:port of every instance (healthy or not) of
	// service in group that the server holds now, or an error when the
	// server did not answer.
	Addrs(service, group string) ([]string, error)
}

// Registration is one instance this process registered and keeps.
type Registration struct {
	ID       string // identifies it from one Source.Kept to the next
	Server   Server // where it is registered
	Service  string
	Group    string
	Addr     string // host:port, as Server.Addrs lists it
	Register func() error
}

// Source lists what to keep.
type Source interface {
	// Kept returns the registrations to keep now: registered by this
	// process and not withdrawn by it. Register of a registration
	// withdrawn since must fail rather than register it.
	Kept() []Registration
}

// Sources is a Source of the registrations of each of its Sources, whose
// Registration.IDs must not collide.
type Sources []Source

// Kept returns the registrations of every source, in order.
func (ss Sources) Kept() []Registration {
	var out []Registration
	for _, s := range ss {
		out = append(out, s.Kept()...)
	}
	return out
}

// Keeper keeps the registrations of a Source.
type Keeper struct {
	src      Source
	interval time.Duration
	misses   int
	clock    Clock
	warnf    func(string, ...any)

	mu     sync.Mutex     // one Check at a time
	missed map[string]int // by Registration.ID: reads in a row without it
}

// New returns a Keeper of src; Run or Check it.
func New(src Source, o Options) *Keeper {
	k := &Keeper{src: src, interval: o.Interval, misses: o.Misses, clock: o.Clock, warnf: o.Warnf, missed: map[string]int{}}
	if k.interval <= 0 {
		k.interval = DefaultInterval
	}
	if k.misses < 1 {
		k.misses = DefaultMisses
	}
	if k.clock == nil {
		k.clock = realClock{}
	}
	if k.warnf == nil {
		k.warnf = log.Printf
	}
	return k
}

// Run checks every interval until ctx is done.
func (k *Keeper) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.clock.After(k.interval):
		}
		if ctx.Err() != nil {
			return
		}
		k.Check()
	}
}

// Check reads the server once for every registration to keep and
// registers again those missing from Misses answers in a row. It returns
// how many it registered again.
func (k *Keeper) Check() (repaired int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	kept := k.src.Kept()
	live := make(map[string]bool, len(kept))
	for _, r := range kept {
		live[r.ID] = true
		if r.Server == nil || r.Register == nil {
			continue
		}
		addrs, err := r.Server.Addrs(r.Service, r.Group)
		if err != nil || slices.Contains(addrs, r.Addr) {
			delete(k.missed, r.ID)
			continue
		}
		k.missed[r.ID]++
		n := k.missed[r.ID]
		if n < k.misses {
			continue
		}
		if err := r.Register(); err != nil {
			k.warnf("keeper: %s is missing from %s (group %s) on %d reads in a row; registering it again failed: %v", r.Addr, r.Service, r.Group, n, err)
			continue
		}
		delete(k.missed, r.ID)
		repaired++
		k.warnf("keeper: registered %s again in %s (group %s): the registry server had lost it (missing on %d reads in a row, %v apart)", r.Addr, r.Service, r.Group, n, k.interval)
	}
	for id := range k.missed {
		if !live[id] {
			delete(k.missed, id) // withdrawn: forget it
		}
	}
	return repaired
}
