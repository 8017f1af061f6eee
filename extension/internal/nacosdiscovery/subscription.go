package nacosdiscovery

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"dubbo.apache.org/dubbo-go/v3/registry"
	"dubbo.apache.org/dubbo-go/v3/remoting"
	"github.com/nacos-group/nacos-sdk-go/v2/model"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// A subscription keeps one listener (a dubbo-go registry directory) told
// of the enabled, healthy instances of one service, as its feed has them.
type subscription struct {
	src      *source
	feed     *feed
	listener registry.NotifyListener
	// deliver, when set, is told every list instead of the listener being
	// told the difference (application level: see appdiscovery.go).
	deliver func([]model.Instance)
	opts    Options
	// subset, when set, is the reference's subset (lb.subset.size): the
	// listener is told of the members it holds only. peers follows the
	// consumers of the service, for the consumer's position.
	subset *subsetting
	peers  *subscription

	wake chan struct{} // a push arrived (buffered, 1)
	done chan struct{} // closed by close

	mu        sync.Mutex                // serialises apply and the state below
	announced map[string]model.Instance // by ip:port: what the listener was told
	running   bool
	closed    bool
}

// load tells the listener of the instances the feed has now, subscribing
// the feed first so that no push after the read can be missed.
func (sub *subscription) load() error {
	if sub.peers != nil {
		if err := sub.peers.load(); err != nil {
			lblog.Warnf("nacos discovery: reading the consumers %s: %v; the subset is drawn without them until they come", sub.peers.feed, err)
		}
	}
	if err := sub.feed.subscribe(); err != nil {
		return err
	}
	return sub.apply()
}

// subscribe subscribes the feed, retrying with a growing wait until it
// succeeds or the subscription is closed, then follows it until close. It
// does not give up while the registry looks unavailable: a consumer that
// starts before its Nacos client has connected must still follow.
func (sub *subscription) subscribe() {
	sub.mu.Lock()
	if sub.running || sub.closed {
		sub.mu.Unlock()
		return
	}
	sub.running = true
	sub.mu.Unlock()
	for wait := sub.opts.Retry; ; wait = min(2*wait, 30*time.Second) {
		err := sub.feed.subscribe()
		if err == nil {
			break
		}
		lblog.Warnf("nacos discovery: subscribing to %s failed, next try in %v: %v", sub.feed, wait, err)
		select {
		case <-sub.done:
			return
		case <-time.After(wait):
		}
	}
	go sub.follow()
	if sub.subset != nil {
		go sub.peers.subscribe()
		go sub.subset.watchEjections(sub.opts.SubsetCheck, sub.done, sub.wakeUp)
	}
}

// follow applies the feed at once and after every push, until close.
func (sub *subscription) follow() {
	for {
		if err := sub.apply(); err != nil {
			lblog.Warnf("nacos discovery: reading %s: %v", sub.feed, err)
		}
		select {
		case <-sub.done:
			return
		case <-sub.wake:
		}
	}
}

// wakeUp asks follow to apply the feed. It takes no lock: the Nacos client
// may call back from within a query that apply makes.
func (sub *subscription) wakeUp() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

func (sub *subscription) close() error {
	sub.mu.Lock()
	if sub.closed {
		sub.mu.Unlock()
		return nil
	}
	sub.closed = true
	close(sub.done)
	sub.mu.Unlock()
	err := sub.feed.unwatch(sub)
	sub.src.release()
	if sub.peers != nil {
		sub.subset.stop()
		err = errors.Join(err, sub.peers.close())
	}
	return err
}

// apply tells the listener what changed since it was last told: an
// enabled, healthy instance it does not know is added, one whose metadata
// or Nacos weight changed is updated, and one that is gone, disabled or unhealthy is
// deleted.
func (sub *subscription) apply() error {
	// Read under the lock: a query that began before a push must not be
	// applied after it.
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.closed {
		return nil
	}
	list, err := sub.feed.current()
	if err != nil {
		return err
	}
	if sub.deliver != nil {
		sub.deliver(list)
		return nil
	}
	if sub.announced == nil {
		sub.announced = map[string]model.Instance{}
	}
	usable := usableByHost(list)
	if sub.subset != nil {
		held := sub.subset.pick(candidatesOf(list))
		maps.DeleteFunc(usable, func(host string, _ model.Instance) bool { return !held[host] })
	}
	for host, in := range usable {
		old, known := sub.announced[host]
		action := remoting.EventTypeAdd
		if known {
			if old.Weight == in.Weight && maps.Equal(old.Metadata, in.Metadata) {
				continue
			}
			action = remoting.EventTypeUpdate
		}
		if sub.notify(action, in) {
			sub.announced[host] = in
		}
	}
	for host, in := range sub.announced {
		if _, ok := usable[host]; !ok {
			sub.notify(remoting.EventTypeDel, in)
			delete(sub.announced, host)
		}
	}
	return nil
}

// notify tells the listener of one change; false when in has no valid
// provider URL (logged), and so was not announced.
func (sub *subscription) notify(action remoting.EventType, in model.Instance) bool {
	u, err := providerURL(in)
	if err != nil {
		lblog.Warnf("nacos discovery: instance %s of %s ignored: %v", hostOf(in), sub.feed, err)
		return false
	}
	sub.listener.Notify(&registry.ServiceEvent{Action: action, Service: u})
	return true
}

// candidatesOf returns the full set of list for subsetting: every
// instance with a valid provider URL, one per address (a usable one when
// there is one), marked usable or not.
func candidatesOf(list []model.Instance) []candidate {
	byHost := make(map[string]candidate, len(list))
	for _, in := range list {
		host := hostOf(in)
		if c, ok := byHost[host]; ok && c.usable {
			continue
		}
		if u, err := providerURL(in); err == nil {
			byHost[host] = candidate{url: u, usable: usable(in)}
		}
	}
	return slices.Collect(maps.Values(byHost))
}

func hostOf(in model.Instance) string {
	return in.Ip + ":" + strconv.FormatUint(in.Port, 10)
}
