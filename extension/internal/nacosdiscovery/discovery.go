// Package nacosdiscovery is the consumer's view of providers registered in
// Nacos: at interface level a registry directory, at application level a
// service discovery, that tell dubbo-go of exactly the enabled, healthy
// instances of each subscribed service or application, and never miss one.
//
// dubbo-go v3.3.2's Nacos listener loses a provider pushed to the shared
// Nacos client between its first query and its subscription. Here a Nacos
// client of this package's own subscribes to a service before it is ever
// queried for it, so every push reaches the callback; one subscription per
// service feeds every directory; and each service is read again from the
// server's Open API after subscribing, after every push and every 30 s, to
// repair the Nacos client's out-of-order callbacks. Registration at
// interface level stays with dubbo-go.
//
// At application level (registry-type: service, all) NewServiceDiscovery
// replaces dubbo-go's Nacos service discovery: the same feeds, the
// enabled, healthy instances only, provider URLs that keep the provider's
// weight, and a registration of its own, as dubbo-go's. At both levels the
// provider URLs carry the factor of the Nacos instance weight
// (nacosweight). The faults, the fix and the measurements are in DESIGN.md
// beside this file.
package nacosdiscovery

import (
	"strconv"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/directory"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/registry"
	regdir "dubbo.apache.org/dubbo-go/v3/registry/directory"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/model"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// Protocol is the registry protocol whose directory this package provides.
const Protocol = constant.NacosKey

// Options tune the directory and the service discovery. The zero value
// gives the defaults.
type Options struct {
	// Retry is the first wait after a failed subscription; it doubles up to
	// 30 s. Default 1 s.
	Retry time.Duration
	// Resync is how often each subscribed service's instances are read
	// from the server and compared with what the pushes said. Default 30 s.
	Resync time.Duration
	// Confirm is the wait before reading the server again to confirm an
	// answer that differed from the pushes, and the first wait after
	// subscribing; the waits double from it up to Resync. Default 1 s.
	Confirm time.Duration
	// SubsetCheck is how often a reference that subsets (lb.subset.size)
	// reads which of its members outlier detection ejected, to grow its
	// subset past them. Default 1 s.
	SubsetCheck time.Duration

	// Application level, provider side:

	// Registrations records, when set, every instance the service
	// discovery registers and has not withdrawn, for the registration
	// keeper (extension.KeepRegistered). Default none.
	Registrations *Registrations
	// NamingClient makes the Nacos client of the registrations from the
	// client's URL (address, namespace, login, client name). Default
	// dubbo-go's pooled client (remoting/nacos.NewNacosClientByURL).
	NamingClient func(clientURL *common.URL) (naming_client.INamingClient, error)
}

func (o Options) withDefaults() Options {
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	if o.Resync <= 0 {
		o.Resync = 30 * time.Second
	}
	if o.Confirm <= 0 {
		o.Confirm = time.Second
	}
	o.Confirm = min(o.Confirm, o.Resync)
	if o.SubsetCheck <= 0 {
		o.SubsetCheck = time.Second
	}
	return o
}

// NewDirectory returns a factory for dubbo-go's extension.SetDirectory:
// dubbo-go's own registry directory, over a registry whose consumer
// subscriptions this package serves (see Wrap).
func NewDirectory(o Options) func(*common.URL, registry.Registry) (directory.Directory, error) {
	return func(url *common.URL, reg registry.Registry) (directory.Directory, error) {
		return regdir.NewRegistryDirectory(url, Wrap(reg, o))
	}
}

// Wrap returns reg with its consumer subscriptions to one service served
// by this package, through a Nacos client of its own configured from reg's
// URL. Registration and everything else stay with reg.
func Wrap(reg registry.Registry, o Options) registry.Registry {
	return &subscriber{Registry: reg, opts: o.withDefaults()}
}

// subscriber is a registry whose consumer subscriptions go through this
// package.
type subscriber struct {
	registry.Registry
	opts Options
	subs listeners[*subscription]
}

// subscription returns the subscription of listener, made for url on first
// use; nil when this package does not serve url (not a consumer of one
// service), or when no Nacos client can be made from the registry's URL
// (logged): dubbo-go's own listener serves those.
func (s *subscriber) subscription(url *common.URL, listener registry.NotifyListener) *subscription {
	role, _ := strconv.Atoi(url.GetParam(constant.RegistryRoleKey, ""))
	if role != common.CONSUMER || url.GetParam(constant.InterfaceKey, "") == constant.AnyValue {
		return nil
	}
	return s.subs.getOrAdd(listener, func() *subscription {
		src, err := acquire(s.GetURL())
		if err != nil {
			lblog.Warnf("nacos discovery: no Nacos client for %s (%v); dubbo-go's own listener serves it", s.GetURL().Location, err)
			return nil
		}
		return newSubscription(src, url, listener, s.GetURL().GetParam(constant.RegistryGroupKey, defaultGroup), s.opts)
	})
}

// newSubscription returns the subscription of listener to the service of
// the reference url in group, through src. When the reference subsets
// (lb.subset.size) it also follows the consumers of the service, as
// dubbo-go registers them at interface level, which place this consumer on
// the aperture's ring.
func newSubscription(src *source, url *common.URL, listener registry.NotifyListener, group string, o Options) *subscription {
	sub := &subscription{src: src, listener: listener, opts: o, wake: make(chan struct{}, 1), done: make(chan struct{})}
	sub.feed = src.watch(serviceName(url), group, sub, o)
	if cfg := readSubset(url); cfg.Size > 0 {
		ss := newSubsetting(url, cfg, levelInterface)
		peers := &subscription{src: src, opts: o, wake: make(chan struct{}, 1), done: make(chan struct{})}
		src.hold()
		peers.deliver = func(list []model.Instance) {
			if ss.setConsumers(list) {
				sub.wakeUp()
			}
		}
		peers.feed = src.watch(consumersService(url), group, peers, o)
		sub.subset, sub.peers = ss, peers
		ss.start()
	}
	return sub
}

// LoadSubscribeInstances tells listener of the instances Nacos has now, as
// dubbo-go asks before it subscribes. A failure (Nacos down, or its client
// still connecting) is logged, not returned: dubbo-go would give up the
// reference for good, where the subscription brings the instances as soon
// as Nacos answers.
func (s *subscriber) LoadSubscribeInstances(url *common.URL, listener registry.NotifyListener) error {
	sub := s.subscription(url, listener)
	if sub == nil {
		return s.Registry.LoadSubscribeInstances(url, listener)
	}
	if err := sub.load(); err != nil {
		lblog.Warnf("nacos discovery: reading %s before subscribing: %v; the subscription will bring the instances", sub.feed, err)
	}
	return nil
}

// Subscribe subscribes listener to the service of url, retrying until it
// succeeds or the subscription ends, and returns once subscribed.
func (s *subscriber) Subscribe(url *common.URL, listener registry.NotifyListener) error {
	sub := s.subscription(url, listener)
	if sub == nil {
		return s.Registry.Subscribe(url, listener)
	}
	sub.subscribe()
	return nil
}

// UnSubscribe ends the subscription of listener.
func (s *subscriber) UnSubscribe(url *common.URL, listener registry.NotifyListener) error {
	sub := s.subs.remove(listener)
	if sub == nil {
		return s.Registry.UnSubscribe(url, listener)
	}
	return sub.close()
}

// Destroy ends every subscription, then destroys the wrapped registry.
func (s *subscriber) Destroy() {
	for _, sub := range s.subs.removeAll() {
		_ = sub.close()
	}
	s.Registry.Destroy()
}

const defaultGroup = "DEFAULT_GROUP"

// serviceName is the Nacos service of url's interface, version and group
// under interface-level registration, as dubbo-go names it.
func serviceName(url *common.URL) string {
	return strings.Join([]string{"providers", url.GetParam(constant.InterfaceKey, ""),
		url.GetParam(constant.VersionKey, ""), url.GetParam(constant.GroupKey, "")}, ":")
}
