package nacosdiscovery

import (
	"slices"
	"sync"

	"dubbo.apache.org/dubbo-go/v3/common"
	"github.com/nacos-group/nacos-sdk-go/v2/clients"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// A source is a Nacos client of this package's own, one per registry
// (Nacos address, namespace and credentials), shared by every subscription
// through it and closed with the last one. Nobody else reads or fills its
// cache: each service is subscribed (its callback registered) and never
// queried through the client, so every change of the cache reaches the
// callback. The callback copies the list: the client sorts its cached
// lists in place later, so reading them outside the callback would race.
// What the client cannot be trusted with (the order of its callbacks, see
// resync.go) is checked against the server's Open API.
type source struct {
	key  string
	sdk  naming_client.INamingClient
	api  server // the server's answers without the client's cache
	refs int    // subscriptions; guarded by sourcesMu
	// keepOnEmpty: the registry's nacos.updateCacheWhenEmpty is false, so
	// the client ignores an answer with no instance at all, and the feeds
	// ignore any list with no usable instance (keepsLocked).
	keepOnEmpty bool

	mu    sync.Mutex
	feeds map[string]*feed // by group and service
}

var (
	sourcesMu sync.Mutex
	sources   = map[string]*source{}
)

// acquire returns the source of the registry at regURL, made on first use.
func acquire(regURL *common.URL) (*source, error) {
	servers, config, tc, err := nacosConfig(regURL)
	if err != nil {
		return nil, err
	}
	key := regURL.Location + "|" + config.NamespaceId + "|" + config.Username
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	if src, ok := sources[key]; ok {
		src.refs++
		return src, nil
	}
	// An empty cache at start: a list loaded from disk would take the place
	// of the first push, and no callback would follow.
	config.NotLoadCacheAtStart = true
	// The client's own periodic re-query stays off: it is one more
	// goroutine storing into the cache and calling back beside pushes, and
	// the resync of each feed (resync.go) does its job against the server.
	config.AsyncUpdateService = false
	sdk, err := clients.NewNamingClient(vo.NacosClientParam{ClientConfig: &config, ServerConfigs: servers})
	if err != nil {
		return nil, err
	}
	src := &source{key: key, sdk: sdk, api: newOpenAPI(servers, config, tc), refs: 1, feeds: map[string]*feed{},
		keepOnEmpty: !config.UpdateCacheWhenEmpty}
	sources[key] = src
	return src, nil
}

// hold takes one more hold on src, for one more subscription.
func (src *source) hold() {
	sourcesMu.Lock()
	src.refs++
	sourcesMu.Unlock()
}

// read returns the instances of service in group: the feed's list when a
// feed follows it, else the server's answer (never the client's cache).
func (src *source) read(service, group string) ([]model.Instance, error) {
	src.mu.Lock()
	f := src.feeds[group+"@@"+service]
	src.mu.Unlock()
	if f != nil {
		return f.current()
	}
	return src.api.instances(service, group)
}

// release drops one subscription's hold on src; the last closes it.
func (src *source) release() {
	sourcesMu.Lock()
	src.refs--
	last := src.refs == 0
	if last {
		delete(sources, src.key)
	}
	sourcesMu.Unlock()
	if last {
		src.sdk.CloseClient()
	}
}

// server reads the instances of a service from the Nacos server itself.
type server interface {
	instances(service, group string) ([]model.Instance, error)
}

// A feed is the one subscription of a source to one service, and the last
// list of instances pushed for it (or put in place by a resync).
type feed struct {
	src         *source
	service     string
	group       string
	param       *vo.SubscribeParam
	opts        Options
	keepOnEmpty bool          // the source's
	done        chan struct{} // closed when the last subscription leaves

	pushedSignal chan struct{} // a push arrived (buffered, 1), for resync

	subscribing sync.Mutex // serialises subscribe; the client calls back from within it
	mu          sync.Mutex
	subscribed  bool
	pushed      []model.Instance // owned copy of the last push; nil before one
	pushes      uint64           // number of pushes so far
	suspect     *answer          // a server answer that differed from pushed
	subs        map[*subscription]struct{}
	keeping     bool // pushed is kept over lists with no usable instance (keepsLocked)
}

// watch returns the feed of service in group, made on first use, with sub
// among those it wakes on every push.
func (src *source) watch(service, group string, sub *subscription, opts Options) *feed {
	src.mu.Lock()
	defer src.mu.Unlock()
	key := group + "@@" + service
	f, ok := src.feeds[key]
	if !ok {
		f = &feed{src: src, service: service, group: group, opts: opts, keepOnEmpty: src.keepOnEmpty, done: make(chan struct{}), pushedSignal: make(chan struct{}, 1), subs: map[*subscription]struct{}{}}
		f.param = &vo.SubscribeParam{ServiceName: service, GroupName: group, SubscribeCallback: f.onPush}
		src.feeds[key] = f
	}
	f.mu.Lock()
	f.subs[sub] = struct{}{}
	f.mu.Unlock()
	return f
}

// unwatch removes sub; the feed's last subscription unsubscribes it.
func (f *feed) unwatch(sub *subscription) error {
	f.src.mu.Lock()
	f.mu.Lock()
	delete(f.subs, sub)
	last := len(f.subs) == 0
	subscribed := f.subscribed
	if last {
		delete(f.src.feeds, f.group+"@@"+f.service)
		close(f.done)
	}
	f.mu.Unlock()
	f.src.mu.Unlock()
	if last && subscribed {
		return f.src.sdk.Unsubscribe(f.param)
	}
	return nil
}

// subscribe subscribes the feed once; a failure is returned, to retry.
func (f *feed) subscribe() error {
	f.subscribing.Lock()
	defer f.subscribing.Unlock()
	f.mu.Lock()
	done := f.subscribed
	f.mu.Unlock()
	if done {
		return nil
	}
	if err := f.src.sdk.Subscribe(f.param); err != nil {
		return err
	}
	f.mu.Lock()
	f.subscribed = true
	f.mu.Unlock()
	go f.resync()
	return nil
}

// onPush is the Nacos client's callback: it keeps a copy of the list and
// wakes every subscription.
func (f *feed) onPush(list []model.Instance, err error) {
	if err != nil {
		return
	}
	f.mu.Lock()
	f.pushes++
	select {
	case f.pushedSignal <- struct{}{}:
	default:
	}
	if f.keepsLocked(list) {
		f.mu.Unlock()
		return
	}
	f.setLocked(slices.Clone(list))
}

// keepsLocked reports whether list, pushed or read from the server, is to
// be ignored: the registry keeps the known instances
// (nacos.updateCacheWhenEmpty false) and list has no usable instance
// (enabled and healthy) while the feed's list has one. The first list
// kept logs one WARN, the next ones none until a list is put in place.
// Called with f.mu held.
func (f *feed) keepsLocked(list []model.Instance) bool {
	if !f.keepOnEmpty || hasUsable(list) || !hasUsable(f.pushed) {
		return false
	}
	if !f.keeping {
		f.keeping = true
		lblog.Warnf("nacos discovery: %s: Nacos lists %d instances and none is enabled and healthy; keeping the last %d usable ones (nacos.updateCacheWhenEmpty is false)",
			f, len(list), len(usableByHost(f.pushed)))
	}
	return true
}

// setLocked makes list the feed's instances and wakes every subscription;
// called with f.mu held, which it releases.
func (f *feed) setLocked(list []model.Instance) {
	if list == nil {
		list = []model.Instance{}
	}
	f.pushed = list
	f.keeping = false
	subs := make([]*subscription, 0, len(f.subs))
	for s := range f.subs {
		subs = append(subs, s)
	}
	f.mu.Unlock()
	for _, s := range subs {
		s.wakeUp()
	}
}

// current returns the instances of the service: the last push once there
// was one, else the server's answer, read outside the Nacos client (whose
// cache is the client's own until a push: reading it would race with the
// client sorting it in place).
func (f *feed) current() ([]model.Instance, error) {
	f.mu.Lock()
	pushed := f.pushed
	f.mu.Unlock()
	if pushed != nil {
		return pushed, nil
	}
	return f.src.api.instances(f.service, f.group)
}

func (f *feed) String() string {
	return f.service + " in group " + f.group
}
