package nacosdiscovery

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/registry"
	_ "dubbo.apache.org/dubbo-go/v3/registry/nacos"
	"dubbo.apache.org/dubbo-go/v3/remoting"
	dgnacos "dubbo.apache.org/dubbo-go/v3/remoting/nacos"
	"github.com/nacos-group/nacos-sdk-go/v2/clients"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	nacosconst "github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
)

// The tests in this file talk to a real Nacos server, as the it/ tests do.

const (
	envNacos = "DUBBOGO_LB_NACOS"
	// envNacosAuth names a Nacos with authentication on (host:port of its
	// HTTP API), and the two after it the user and password the tests log
	// in with (user default nacos); it/test.sh starts one and sets them.
	envNacosAuth         = "DUBBOGO_LB_NACOS_AUTH"
	envNacosAuthUsername = "DUBBOGO_LB_NACOS_AUTH_USERNAME"
	envNacosAuthPassword = "DUBBOGO_LB_NACOS_AUTH_PASSWORD"

	iface   = "org.dubbogo.lb.samples.Greeter"
	service = "providers:" + iface + "::"
)

// needNacos skips t without a Nacos in the environment variable name, or
// fails it when CI=true.
func needNacos(t *testing.T, name string) {
	t.Helper()
	if os.Getenv(name) == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set but CI=true (bash it/test.sh starts a Nacos)", name)
		}
		t.Skipf("%s is not set: Nacos tests skipped (bash it/test.sh runs them)", name)
	}
}

// nacosServer is a Nacos server the tests talk to, and how its clients
// reach it: their namespace and credentials.
type nacosServer struct {
	host      string
	port      uint64
	namespace string // "": public
	username  string
	password  string
}

// plainNacos is the Nacos in DUBBOGO_LB_NACOS (authentication off), in
// the public namespace.
func plainNacos(t tb) nacosServer {
	t.Helper()
	host, port := nacosAddr(t, envNacos)
	return nacosServer{host: host, port: port}
}

// authNacos is the Nacos in DUBBOGO_LB_NACOS_AUTH, logged in to with the
// credentials of the environment, in a namespace of t's own.
func authNacos(t tb) nacosServer {
	t.Helper()
	host, port := nacosAddr(t, envNacosAuth)
	s := nacosServer{host: host, port: port, username: os.Getenv(envNacosAuthUsername), password: os.Getenv(envNacosAuthPassword),
		namespace: fmt.Sprintf("nacosdiscovery-%d", time.Now().UnixNano())}
	if s.username == "" {
		s.username = "nacos" // the user it/nacos.sh makes
	}
	if s.password == "" {
		t.Fatalf("%s is set but %s is not", envNacosAuth, envNacosAuthPassword)
	}
	return s
}

func (s nacosServer) addr() string {
	return net.JoinHostPort(s.host, strconv.FormatUint(s.port, 10))
}

// nacosAddr returns the host and port of the Nacos in the environment
// variable name.
func nacosAddr(t tb, name string) (host string, port uint64) {
	t.Helper()
	h, p, err := net.SplitHostPort(os.Getenv(name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h, n
}

var groups sync.Map

// groupOf returns a Nacos group of t's own.
func groupOf(t tb) string {
	g := fmt.Sprintf("NACOSDISCOVERY_%d", time.Now().UnixNano())
	groups.Store(g, t.Name())
	return g
}

// sdkClient returns a Nacos naming client of its own for the Nacos in
// DUBBOGO_LB_NACOS.
func sdkClient(t tb) naming_client.INamingClient { return plainNacos(t).client(t) }

// client returns a Nacos naming client of its own (not the pooled one
// dubbo-go shares), closed when t ends.
func (s nacosServer) client(t tb) naming_client.INamingClient {
	t.Helper()
	dir := t.TempDir()
	c, err := clients.NewNamingClient(vo.NacosClientParam{
		ClientConfig: &nacosconst.ClientConfig{
			TimeoutMs: 10000, NotLoadCacheAtStart: true, CacheDir: dir, LogDir: dir, LogLevel: "warn",
			NamespaceId: s.namespace, Username: s.username, Password: s.password,
		},
		ServerConfigs: []nacosconst.ServerConfig{{IpAddr: s.host, Port: s.port, ContextPath: "/nacos"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseClient)
	s.waitConnected(t, c)
	return c
}

// waitConnected waits until c is connected to the server. A client's first
// connection is checked within 3 s; on a busy machine (a Nacos just
// started, load 25) that check times out, the client goes on connecting in
// the background, and a registration or query made meanwhile fails with
// "client not connected". Wait for the connection as a provider process
// would, under a generous deadline.
func (s nacosServer) waitConnected(t tb, c naming_client.INamingClient) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !c.ServerHealthy() {
		if time.Now().After(deadline) {
			t.Fatalf("Nacos client of %s:%d not connected after 2 minutes", s.host, s.port)
		}
		time.Sleep(50 * time.Millisecond) // polling the client's connection state
	}
}

// register registers a greeter provider at 127.0.0.1:port in group of the
// Nacos in DUBBOGO_LB_NACOS.
func register(t tb, group string, port uint64) { plainNacos(t).register(t, group, port) }

// register registers a greeter provider at 127.0.0.1:port in group with
// a Nacos client of its own, as a provider process does (Nacos keeps one
// instance of a service per client connection).
//
// A connection that the client drops between its health check and the
// registration (seen under two CPU hogs, a Nacos with authentication just
// started: "client not connected, current status:UNHEALTHY", and the
// server's "Connection is unregistered." for a connection it had dropped)
// is waited for again, as a provider process's nacos.retry does, under the
// client's 2-minute deadline; any other error fails t at once.
func (s nacosServer) register(t tb, group string, port uint64) {
	t.Helper()
	c := s.client(t)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, err := c.RegisterInstance(vo.RegisterInstanceParam{
			Ip: "127.0.0.1", Port: port, Weight: 100, Enable: true, Healthy: true, Ephemeral: true,
			ServiceName: service, GroupName: group,
			Metadata: map[string]string{"interface": iface, "path": iface, "protocol": "tri", "weight": "100"},
		})
		if err == nil && ok {
			return
		}
		if err == nil || !connectionLost(err) || time.Now().After(deadline) {
			t.Fatalf("register 127.0.0.1:%d: %v", port, err)
		}
		for !c.ServerHealthy() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // polling the client's connection state
		}
	}
}

// connectionLost reports whether err says that the client's connection to
// the server was lost (by the client or by the server) before the request.
func connectionLost(err error) bool {
	return strings.Contains(err.Error(), "client not connected") || strings.Contains(err.Error(), "Connection is unregistered")
}

// dubboRegistry returns dubbo-go's Nacos registry for group of the Nacos
// in DUBBOGO_LB_NACOS.
func dubboRegistry(t tb, group, client string) registry.Registry {
	return plainNacos(t).registry(t, group, client)
}

// registry returns dubbo-go's Nacos registry for group, with a Nacos
// client of its own (dubbo-go pools clients by name).
func (s nacosServer) registry(t tb, group, client string) registry.Registry {
	t.Helper()
	dir := t.TempDir()
	u, err := common.NewURL("registry://"+s.addr(),
		common.WithParamsValue(constant.RegistryGroupKey, group),
		common.WithParamsValue(constant.RegistryNamespaceKey, s.namespace),
		common.WithUsername(s.username),
		common.WithPassword(s.password),
		common.WithParamsValue(constant.ClientNameKey, client),
		common.WithParamsValue(constant.NacosCacheDirKey, dir),
		common.WithParamsValue(constant.NacosLogDirKey, dir),
		common.WithParamsValue(constant.NacosLogLevelKey, "warn"),
		common.WithParamsValue(constant.NacosUpdateCacheWhenEmpty, "false"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := dgext.GetRegistry(constant.NacosKey, u)
	if err != nil {
		t.Fatal(err)
	}
	// The registry's client is pooled by name, so this is the same client
	// (not closed here: closing a pooled client may drop it from under the
	// registry). The registry's first query must not race the client's
	// connection (seen under two CPU hogs: "could not query the
	// instances … client not connected").
	pooled, err := dgnacos.NewNacosClientByURL(u)
	if err != nil {
		t.Fatal(err)
	}
	s.waitConnected(t, pooled.Client())
	return reg
}

// consumerURL is what a consumer of the greeter subscribes with.
func consumerURL(t tb) *common.URL {
	t.Helper()
	u, err := common.NewURL("consumer://127.0.0.1/"+iface, common.WithParams(url.Values{
		constant.InterfaceKey:    {iface},
		constant.RegistryRoleKey: {strconv.Itoa(common.CONSUMER)},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// follow makes a consumer of the greeter follow the service through w, as
// dubbo-go's directory does (it loads the instances, then subscribes),
// until t ends; it waits up to 30 s until the consumer knows exactly want,
// and returns its listener and its subscription's feed.
func follow(t tb, w *subscriber, want ...string) (*recorder, *feed) {
	t.Helper()
	u, rec := consumerURL(t), newRecorder()
	if err := w.LoadSubscribeInstances(u, rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Subscribe(u, rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.UnSubscribe(u, rec) })
	if !rec.waitProviders(30*time.Second, want...) {
		t.Fatalf("after subscribing the consumer knows %v (events %v), want %v", rec.providers(), rec.log(), want)
	}
	return rec, w.subs.get(rec).feed
}

// recorder is a NotifyListener that keeps the providers it was told of.
type recorder struct {
	mu      sync.Mutex
	events  []string               // "add 127.0.0.1:20001", in order
	up      map[string]int         // provider -> adds minus deletes
	urls    map[string]*common.URL // provider -> its last URL
	changed chan struct{}          // signalled on every event
}

func newRecorder() *recorder {
	return &recorder{up: map[string]int{}, urls: map[string]*common.URL{}, changed: make(chan struct{}, 1)}
}

// last returns the URL of the provider's last event.
func (r *recorder) last(addr string) *common.URL {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.urls[addr]
}

func (r *recorder) Notify(e *registry.ServiceEvent) {
	r.mu.Lock()
	addr := e.Service.Location
	switch e.Action {
	case remoting.EventTypeAdd:
		r.up[addr]++
	case remoting.EventTypeDel:
		r.up[addr]--
	}
	r.events = append(r.events, e.Action.String()+" "+addr)
	r.urls[addr] = e.Service
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) NotifyAll(es []*registry.ServiceEvent, done func()) {
	for _, e := range es {
		r.Notify(e)
	}
	if done != nil {
		done()
	}
}

// providers returns the providers the listener was told are up, sorted.
func (r *recorder) providers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for p, n := range r.up {
		if n > 0 {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (r *recorder) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// waitProviders waits up to timeout until the listener knows exactly want,
// and reports whether it did.
func (r *recorder) waitProviders(timeout time.Duration, want ...string) bool {
	slices.Sort(want)
	return r.waitFor(timeout, func() bool { return slices.Equal(r.providers(), want) })
}

// waitEvent waits up to timeout until the listener was told event (as
// "delete 127.0.0.1:20002"), and reports whether it was.
func (r *recorder) waitEvent(timeout time.Duration, event string) bool {
	return r.waitFor(timeout, func() bool { return slices.Contains(r.log(), event) })
}

// waitFor waits up to timeout, checking after every event, until done
// holds, and reports whether it did.
func (r *recorder) waitFor(timeout time.Duration, done func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !done() {
		select {
		case <-r.changed:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// pushed subscribes a probe to the service on c and returns a channel that
// receives every list that the client's cache takes from a push.
func pushed(t tb, c naming_client.INamingClient, group string) <-chan []string {
	t.Helper()
	ch := make(chan []string, 16)
	param := &vo.SubscribeParam{ServiceName: service, GroupName: group, SubscribeCallback: func(list []model.Instance, _ error) {
		var addrs []string
		for _, in := range list {
			addrs = append(addrs, hostOf(in))
		}
		slices.Sort(addrs)
		select {
		case ch <- addrs:
		default:
		}
	}}
	if err := c.Subscribe(param); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Unsubscribe(param) })
	return ch
}

// waitPushed waits for a push of exactly want.
func waitPushed(t tb, ch <-chan []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-ch:
			if slices.Equal(got, want) {
				return
			}
		case <-deadline:
			t.Fatalf("the Nacos client's cache did not receive %v within 30 s", want)
		}
	}
}

// pooledClient is the Nacos client that dubbo-go's registry reg shares
// with its listeners.
func pooledClient(t tb, reg registry.Registry) naming_client.INamingClient {
	t.Helper()
	nc, err := dgnacos.NewNacosClientByURL(reg.GetURL())
	if err != nil {
		t.Fatal(err)
	}
	return nc.Client()
}

// waitFeed waits until the feed of listener's subscription through w has
// been pushed exactly want.
func waitFeed(t tb, w *subscriber, listener registry.NotifyListener, want ...string) {
	t.Helper()
	sub := w.subs.get(listener)
	if sub == nil {
		t.Fatal("no subscription for the listener")
	}
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		sub.feed.mu.Lock()
		var got []string
		for _, in := range sub.feed.pushed {
			got = append(got, hostOf(in))
		}
		sub.feed.mu.Unlock()
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed was pushed %v, want %v, within 30 s", got, want)
		}
		time.Sleep(20 * time.Millisecond) // polling the Nacos client's pushes
	}
}
