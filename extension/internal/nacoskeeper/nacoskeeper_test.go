package nacoskeeper

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/registry"

	"github.com/dubbogo-lb/lb/extension/internal/keeper"
	"github.com/dubbogo-lb/lb/extension/internal/keeper/keepertest"
)

// fakeNacos answers the Open API's instance list from hosts, by service.
type fakeNacos struct {
	mu    sync.Mutex
	hosts map[string][]map[string]any // by groupName@@serviceName
	down  bool
	*httptest.Server
}

func newFakeNacos(t *testing.T) *fakeNacos {
	n := &fakeNacos{hosts: map[string][]map[string]any{}}
	n.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.down || r.URL.Path != "/nacos/v1/ns/instance/list" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		q := r.URL.Query()
		_ = json.NewEncoder(w).Encode(map[string]any{"hosts": n.hosts[q.Get("groupName")+"@@"+q.Get("serviceName")]})
	}))
	t.Cleanup(n.Close)
	return n
}

func (n *fakeNacos) set(group, service string, ip string, port int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := group + "@@" + service
	if ip == "" {
		delete(n.hosts, key)
		return
	}
	n.hosts[key] = []map[string]any{{"ip": ip, "port": port, "healthy": true, "enabled": true}}
}

func (n *fakeNacos) addr() string { return strings.TrimPrefix(n.URL, "http://") }

// fakeRegistry records Register calls and puts the instance back in
// the fake Nacos, as dubbo-go's Nacos registry does.
type fakeRegistry struct {
	url   *common.URL
	nacos *fakeNacos
	mu    sync.Mutex
	urls  []*common.URL
}

func (r *fakeRegistry) GetURL() *common.URL { return r.url }
func (r *fakeRegistry) IsAvailable() bool   { return true }
func (r *fakeRegistry) Destroy()            {}
func (r *fakeRegistry) Register(u *common.URL) error {
	r.mu.Lock()
	r.urls = append(r.urls, u)
	r.mu.Unlock()
	port := 0
	for _, c := range u.Port {
		port = port*10 + int(c-'0')
	}
	r.nacos.set(r.url.GetParam(constant.NacosGroupKey, ""), serviceName(u), u.Ip, port)
	return nil
}
func (r *fakeRegistry) registered() []*common.URL {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*common.URL(nil), r.urls...)
}
func (r *fakeRegistry) UnRegister(*common.URL) error                                      { return nil }
func (r *fakeRegistry) Subscribe(*common.URL, registry.NotifyListener) error              { return nil }
func (r *fakeRegistry) UnSubscribe(*common.URL, registry.NotifyListener) error            { return nil }
func (r *fakeRegistry) LoadSubscribeInstances(*common.URL, registry.NotifyListener) error { return nil }

// fakeRegistryProtocol exports as dubbo-go's registry protocol does, as
// far as the keeper sees: the registry URL's protocol becomes the
// registry's, the registry is made once per URL and registers.
type fakeRegistryProtocol struct {
	regs       []registry.Registry
	nacos      *fakeNacos
	unregister int
	destroyed  int
	fail       int // the next fail exports register nothing (dubbo-go: nil)
	exports    int // Export calls
}

func (p *fakeRegistryProtocol) Export(invoker base.Invoker) base.Exporter {
	p.exports++
	if p.fail > 0 {
		p.fail--
		return nil
	}
	u := invoker.GetURL()
	u.Protocol = u.GetParam(constant.RegistryKey, "")
	if len(p.regs) == 0 {
		u.SetParam(constant.NacosGroupKey, u.GetParam(constant.RegistryGroupKey, "DEFAULT_GROUP"))
		p.regs = append(p.regs, &fakeRegistry{url: u, nacos: p.nacos})
	}
	_ = p.regs[0].Register(registeredURL(u.SubURL.Clone(), u))
	return base.NewBaseExporter("k", invoker, &sync.Map{})
}
func (p *fakeRegistryProtocol) Refer(*common.URL) base.Invoker     { return nil }
func (p *fakeRegistryProtocol) Destroy()                           { p.destroyed++ }
func (p *fakeRegistryProtocol) UnregisterRegistries()              { p.unregister++ }
func (p *fakeRegistryProtocol) GetRegistries() []registry.Registry { return p.regs }

// exportTo exports iface at 127.0.0.1:20000 through w to a Nacos
// registry in group G of the fake Nacos.
func exportTo(t *testing.T, w *protocol, n *fakeNacos, registryParams, iface string) base.Exporter {
	t.Helper()
	reg, err := common.NewURL("registry://" + n.addr() + "?registry=nacos&registry.group=G" + registryParams)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := common.NewURL("tri://127.0.0.1:20000/" + iface + "?interface=" + iface + "&weight=70&warmup=30&.hidden=x&registry.role=3&side=provider")
	if err != nil {
		t.Fatal(err)
	}
	reg.SubURL = sub
	exp := w.Export(base.NewBaseInvoker(reg))
	if exp == nil {
		t.Fatal("no exporter")
	}
	return exp
}

func setup(t *testing.T) (*fakeNacos, *fakeRegistryProtocol, *protocol, *keeper.Keeper) {
	n := newFakeNacos(t)
	inner := &fakeRegistryProtocol{nacos: n}
	w := newProtocol(inner)
	return n, inner, w, keeper.New(w, keeper.Options{Warnf: func(string, ...any) {}})
}

func TestKeeperRegistersALostInstanceAgainWithDubboGosURL(t *testing.T) {
	n, inner, w, k := setup(t)
	exportTo(t, w, n, "", "org.example.A")
	kept := w.Kept()
	if len(kept) != 1 {
		t.Fatalf("kept %d registrations; want 1", len(kept))
	}
	r := kept[0]
	if r.Service != "providers:org.example.A::" || r.Group != "G" || r.Addr != "127.0.0.1:20000" {
		t.Fatalf("kept %s in %s at %s", r.Service, r.Group, r.Addr)
	}
	reg := inner.regs[0].(*fakeRegistry)
	first := reg.registered()[0]

	k.Check()
	k.Check()
	if len(reg.registered()) != 1 {
		t.Fatal("registered again while the server has it")
	}
	n.set("G", "providers:org.example.A::", "", 0) // lost
	k.Check()
	if len(reg.registered()) != 1 {
		t.Fatal("registered again after one miss")
	}
	k.Check()
	urls := reg.registered()
	if len(urls) != 2 {
		t.Fatalf("%d registrations after two misses; want 2", len(urls))
	}
	if got, want := urls[1].String(), first.String(); got != want {
		t.Fatalf("registered again with\n%s\nwant dubbo-go's\n%s", got, want)
	}
	if urls[1].GetParam(".hidden", "") != "" || urls[1].GetParam("weight", "") != "70" {
		t.Fatalf("registered URL %s: want weight 70 and no hidden parameter", urls[1])
	}
}

func TestKeeperServerDownRegistersNothing(t *testing.T) {
	n, inner, w, k := setup(t)
	exportTo(t, w, n, "", "org.example.A")
	n.set("G", "providers:org.example.A::", "", 0)
	n.mu.Lock()
	n.down = true
	n.mu.Unlock()
	for i := 0; i < 4; i++ {
		k.Check()
	}
	if got := len(inner.regs[0].(*fakeRegistry).registered()); got != 1 {
		t.Fatalf("%d registrations with the server down; want only dubbo-go's", got)
	}
}

func TestKeeperNeverRegistersAfterUnregisterRegistries(t *testing.T) {
	n, inner, w, k := setup(t)
	exportTo(t, w, n, "", "org.example.A")
	n.set("G", "providers:org.example.A::", "", 0)
	k.Check()
	kept := w.Kept()
	w.UnregisterRegistries() // graceful shutdown
	if inner.unregister != 1 {
		t.Fatal("UnregisterRegistries not passed on")
	}
	k.Check()
	k.Check()
	reg := inner.regs[0].(*fakeRegistry)
	if len(reg.registered()) != 1 || len(w.Kept()) != 0 {
		t.Fatalf("after the provider unregistered: %d registrations, %d kept", len(reg.registered()), len(w.Kept()))
	}
	if err := kept[0].Register(); err != errWithdrawn {
		t.Fatalf("Register of a withdrawn registration: %v; want errWithdrawn", err)
	}
}

func TestKeeperNeverRegistersAfterDestroyOrUnExport(t *testing.T) {
	n, inner, w, k := setup(t)
	expA := exportTo(t, w, n, "", "org.example.A")
	exportTo(t, w, n, "", "org.example.B")
	if len(w.Kept()) != 2 {
		t.Fatalf("kept %d; want 2", len(w.Kept()))
	}
	expA.UnExport()
	if kept := w.Kept(); len(kept) != 1 || kept[0].Service != "providers:org.example.B::" {
		t.Fatalf("after A's UnExport kept %v; want B only", kept)
	}
	n.set("G", "providers:org.example.A::", "", 0)
	k.Check()
	k.Check()
	if got := len(inner.regs[0].(*fakeRegistry).registered()); got != 2 {
		t.Fatalf("%d registrations; want dubbo-go's 2 only (A unexported)", got)
	}
	w.Destroy()
	if inner.destroyed != 1 || len(w.Kept()) != 0 {
		t.Fatalf("Destroy: passed on %d times, kept %d", inner.destroyed, len(w.Kept()))
	}
}

func TestExportedTwiceIsKeptOnce(t *testing.T) {
	n, _, w, _ := setup(t)
	exportTo(t, w, n, "", "org.example.A")
	exportTo(t, w, n, "", "org.example.A")
	if got := len(w.Kept()); got != 1 {
		t.Fatalf("kept %d; want 1", got)
	}
}

func TestOtherRegistriesAreNotKept(t *testing.T) {
	n := newFakeNacos(t)
	w := newProtocol(&fakeRegistryProtocol{nacos: n})
	reg, _ := common.NewURL("registry://" + n.addr() + "?registry=service-discovery-registry")
	reg.SubURL, _ = common.NewURL("tri://127.0.0.1:20000/org.example.A?interface=org.example.A")
	if exp := w.Export(base.NewBaseInvoker(reg)); exp == nil {
		t.Fatal("no exporter")
	}
	if got := len(w.Kept()); got != 0 {
		t.Fatalf("kept %d exports to a service-discovery registry; want 0", got)
	}
}

func TestRegisteredURLSimplified(t *testing.T) {
	reg, _ := common.NewURL("nacos://127.0.0.1:8848?simplified=true")
	sub, _ := common.NewURL("tri://127.0.0.1:20000/org.example.A?interface=org.example.A&weight=5&methods=Hello&owner=me")
	u := registeredURL(sub, reg)
	if u.GetParam("weight", "") != "5" || u.GetParam("owner", "") != "" || u.GetParam("interface", "") != "org.example.A" {
		t.Fatalf("simplified URL %s: want the reserved parameters only", u)
	}
}

func TestServiceName(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"tri://h:1/a?interface=a", "providers:a::"},
		{"tri://h:1/a?interface=a&version=1.0&group=g&registry.role=3", "providers:a:1.0:g"},
		{"tri://h:1/a?interface=a&registry.role=0", "consumers:a::"},
		{"tri://h:1/a?interface=a&registry.role=99", ":a::"},
		{"tri://h:1/a?interface=a&version=%20", "providers:a::"},
	} {
		u, err := common.NewURL(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := serviceName(u); got != c.want {
			t.Errorf("serviceName(%s) = %q; want %q", c.url, got, c.want)
		}
	}
}

func TestKeepRefusesASecondRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Keep(ctx, keeper.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := Keep(ctx, keeper.Options{}, nil); err == nil {
		t.Fatal("a second Keep while one runs: no error")
	}
}

// A registration Nacos failed is tried again as Dubbo Java's Nacos
// registry does (keepertest.RetryCases), and recorded once when a try
// succeeds; other registries are not tried again.
func TestFailedRegistrationIsTriedAgain(t *testing.T) {
	for _, c := range keepertest.RetryCases {
		t.Run(c.Name, func(t *testing.T) {
			n := newFakeNacos(t)
			inner := &fakeRegistryProtocol{nacos: n, fail: c.Fail}
			w := newProtocol(inner)
			var waits []time.Duration
			w.sleep = func(d time.Duration) { waits = append(waits, d) }
			reg, _ := common.NewURL("registry://" + n.addr() + "?registry=nacos&registry.group=G" + c.Params)
			reg.SubURL, _ = common.NewURL("tri://127.0.0.1:20000/org.example.A?interface=org.example.A")
			exp := w.Export(base.NewBaseInvoker(reg))
			if (exp != nil) != c.OK {
				t.Fatalf("exporter %v; want one: %v", exp, c.OK)
			}
			if inner.exports != c.Tries {
				t.Errorf("%d exports; want %d", inner.exports, c.Tries)
			}
			c.CheckWaits(t, waits)
			want := 0
			if c.OK {
				want = 1
			}
			if got := len(w.Kept()); got != want {
				t.Errorf("kept %d; want %d", got, want)
			}
		})
	}
	t.Run("application level", func(t *testing.T) {
		// The export of application-level discovery in Nacos maps the
		// interface in Nacos's configuration: tried again the same way.
		inner := &fakeRegistryProtocol{nacos: newFakeNacos(t), fail: 2}
		w := newProtocol(inner)
		var waits []time.Duration
		w.sleep = func(d time.Duration) { waits = append(waits, d) }
		reg, _ := common.NewURL("service-discovery-registry://" + inner.nacos.addr() + "?registry=nacos&registry.group=G")
		reg.SubURL, _ = common.NewURL("tri://127.0.0.1:20000/org.example.A?interface=org.example.A")
		if exp := w.Export(base.NewBaseInvoker(reg)); exp == nil || inner.exports != 3 {
			t.Fatalf("exporter %v after %d exports; want one after 3", exp, inner.exports)
		}
		if want := []time.Duration{10 * time.Millisecond, 30 * time.Millisecond}; !slices.Equal(waits, want) {
			t.Errorf("waited %v; want %v", waits, want)
		}
	})
	t.Run("other registries", func(t *testing.T) {
		inner := &fakeRegistryProtocol{nacos: newFakeNacos(t), fail: 1}
		w := newProtocol(inner)
		w.sleep = func(time.Duration) { t.Error("waited to try again an export to a registry that is not Nacos") }
		reg, _ := common.NewURL("registry://127.0.0.1:2181?registry=zookeeper")
		reg.SubURL, _ = common.NewURL("tri://127.0.0.1:20000/org.example.A?interface=org.example.A")
		if exp := w.Export(base.NewBaseInvoker(reg)); exp != nil || inner.exports != 1 {
			t.Fatalf("exporter %v after %d exports; want nil after 1", exp, inner.exports)
		}
	})
}
