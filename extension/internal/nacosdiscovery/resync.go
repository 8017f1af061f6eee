package nacosdiscovery

import (
	"maps"
	"slices"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/model"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// The Nacos client (nacos-sdk-go v2.3.2, the module's; v2.2.5, which
// dubbo-go pins, and v2.3.5 are the same here) can call back with an older list after a newer one: two
// of its goroutines (a push, and the re-subscription after a (re)connect)
// store into its cache and call back at once, each after comparing with
// the same old list. The callback then leaves the feed with the older
// list while the client's cache holds the newer one, so no later answer
// looks like a change and nothing calls back again: the consumer lacks a
// provider until the service changes. Seen at start-up under load, beside
// our own first Subscribe.
//
// A resync repairs it: it reads the server through the Open API, outside
// the client, and compares the instances a listener would be told of.
// Because a query can be answered from a view of the server a little older
// than a push already received, a differing answer is put in place only
// when a second read, Options.Confirm later, gives the same instances and
// no push came in between.

// answer is a server answer that differed from the feed's list.
type answer struct {
	list   []model.Instance
	pushes uint64 // the feed's push count when it was read
}

// resync reads the server for the feed's service Options.Confirm after it
// is subscribed and after every push (when two of the client's goroutines
// can race), then at doubling intervals up to Options.Resync, and again
// Options.Confirm after an answer that differed; until the feed's last
// subscription leaves. A read that fails is tried again Options.Confirm
// later, the waits doubling up to Options.Resync while reads fail: a busy
// server that times out one read may answer the next, and a change the
// client missed is found then, not a whole Resync later.
func (f *feed) resync() {
	wait := f.opts.Confirm
	failing := false // the last read failed
	due := time.Now().Add(wait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-f.pushedSignal:
			if soon := time.Now().Add(f.opts.Confirm); soon.Before(due) {
				wait, due = f.opts.Confirm, soon
				timer.Reset(f.opts.Confirm)
			}
			continue
		case <-timer.C:
		}
		f.mu.Lock()
		pushes := f.pushes
		f.mu.Unlock()
		list, err := f.src.api.instances(f.service, f.group)
		switch {
		case err != nil && failing:
			wait = min(2*wait, f.opts.Resync)
		case err != nil:
			lblog.Warnf("nacos discovery: resync of %s: %v", f, err)
			wait = f.opts.Confirm
		case f.reconcile(list, pushes):
			wait = f.opts.Confirm
		default:
			wait = min(2*wait, f.opts.Resync)
		}
		failing = err != nil
		due = time.Now().Add(wait)
		timer.Reset(wait)
	}
}

// reconcile compares list, read from the server when the feed had seen
// pushes pushes, with the feed's list. It returns true when they differ
// and the answer awaits confirmation. A differing answer that repeats
// one read later with no push in between replaces the feed's list; an
// answer with no usable instance never replaces usable ones when the
// registry keeps the known instances (nacos.updateCacheWhenEmpty false,
// keepsLocked), as a push does not: a restarted Nacos, every instance's
// client losing its registration at once, or every instance turned
// unhealthy or disabled is not a fleet gone.
func (f *feed) reconcile(list []model.Instance, pushes uint64) (pending bool) {
	f.mu.Lock()
	if f.pushes != pushes || f.pushed == nil || sameUsable(list, f.pushed) || f.keepsLocked(list) {
		// A push came during the read (it is at least as new), or none
		// came yet (the first one brings the list), or they agree, or the
		// answer has no usable instance and the registry keeps the list
		// then.
		f.suspect = nil
		f.mu.Unlock()
		return false
	}
	if s := f.suspect; s != nil && s.pushes == pushes && sameUsable(s.list, list) {
		f.suspect = nil
		lblog.Warnf("nacos discovery: %s: the pushed instances missed a change that the server shows; using the server's %d instances", f, len(list))
		f.setLocked(list)
		return false
	}
	f.suspect = &answer{list: list, pushes: pushes}
	f.mu.Unlock()
	return true
}

// sameUsable reports whether a and b hold the same enabled, healthy
// instances, with the same weights and metadata: the same news for a
// listener.
func sameUsable(a, b []model.Instance) bool {
	ua, ub := usableByHost(a), usableByHost(b)
	return maps.EqualFunc(ua, ub, func(x, y model.Instance) bool {
		return x.Weight == y.Weight && maps.Equal(x.Metadata, y.Metadata)
	})
}

// usable reports whether a listener is told of in: it is enabled and
// healthy. Its weight does not matter here (0 is a drain, not a removal).
func usable(in model.Instance) bool { return in.Enable && in.Healthy }

// hasUsable reports whether list has a usable instance.
func hasUsable(list []model.Instance) bool {
	return slices.ContainsFunc(list, usable)
}

// usableByHost returns the usable instances of list by ip:port.
func usableByHost(list []model.Instance) map[string]model.Instance {
	out := make(map[string]model.Instance, len(list))
	for _, in := range list {
		if usable(in) {
			out[hostOf(in)] = in
		}
	}
	return out
}
