package nacosdiscovery

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gxset "github.com/dubbogo/gost/container/set"
	"github.com/dubbogo/gost/gof/observer"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/metadata/info"
	"dubbo.apache.org/dubbo-go/v3/registry"

	"github.com/dubbogo-lb/lb/extension/internal/keeper/keepertest"
	"github.com/dubbogo-lb/lb/warmup"
)

const app = "app"

// appInst is an instance of the application app as dubbo-go registers it.
func appInst(port uint64, weight float64, enabled, healthy bool) model.Instance {
	return model.Instance{Ip: "127.0.0.1", Port: port, Weight: weight, Enable: enabled, Healthy: healthy,
		Metadata: map[string]string{idKey: "127.0.0.1:" + itoa(port), "dubbo.metadata.revision": "r" + itoa(port)}}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// fakeDiscovery is an appDiscovery over a source with client c.
func fakeDiscovery(c *fakeClient) *appDiscovery {
	u, _ := common.NewURL("service-discovery-registry://127.0.0.1:1?registry=nacos&registry.group=G")
	d := newAppDiscovery(u, Options{})
	d.src = &source{key: "fake-app", sdk: c, api: c, refs: 1, feeds: map[string]*feed{}}
	return d
}

// appListener is a registry.ServiceInstancesChangedListener that records
// the addresses of every event.
type appListener struct {
	events chan []string
}

func newAppListener() *appListener { return &appListener{events: make(chan []string, 100)} }

func (l *appListener) OnEvent(e observer.Event) error {
	ce := e.(*registry.ServiceInstancesChangedEvent)
	var addrs []string
	for _, in := range ce.Instances {
		if in.GetServiceName() != app || in.GetID() != in.GetAddress() {
			return errors.New("instance of the wrong application, or its id lost")
		}
		addrs = append(addrs, in.GetAddress())
	}
	l.events <- addrs
	return nil
}

// next returns the addresses of the next event; nil after 30 s without one.
func (l *appListener) next() []string {
	select {
	case a := <-l.events:
		return append([]string{}, a...)
	case <-time.After(30 * time.Second):
		return nil
	}
}

func (l *appListener) GetServiceNames() *gxset.HashSet                      { return gxset.NewSet(app) }
func (l *appListener) AddListenerAndNotify(string, registry.NotifyListener) {}
func (l *appListener) RemoveListener(string)                                {}
func (l *appListener) Accept(observer.Event) bool                           { return true }
func (l *appListener) GetPriority() int                                     { return 0 }
func (l *appListener) GetEventType() reflect.Type                           { return nil }
func (l *appListener) String() string                                       { return "appListener" }

func addrsOf(ins []registry.ServiceInstance) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.GetAddress())
	}
	return out
}

// The listener is told the enabled, healthy instances only, at once and
// after every change, and the same news only once.
func TestAppDiscoveryTellsEnabledHealthyInstances(t *testing.T) {
	c := &fakeClient{list: []model.Instance{appInst(1, 1, true, true), appInst(2, 1, false, true), appInst(3, 1, true, false)}}
	d := fakeDiscovery(c)
	defer d.Destroy()
	if got := addrsOf(d.GetInstances(app)); !slices.Equal(got, []string{"127.0.0.1:1"}) {
		t.Fatalf("GetInstances = %v, want the enabled, healthy 127.0.0.1:1", got)
	}
	l := newAppListener()
	if err := d.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if got := l.next(); !slices.Equal(got, []string{"127.0.0.1:1"}) {
		t.Fatalf("first event %v, want [127.0.0.1:1]", got)
	}
	c.push(appInst(1, 1, true, true), appInst(2, 1, true, true), appInst(3, 1, true, false))
	if got := l.next(); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Fatalf("after 2 was enabled: %v", got)
	}
	// An unhealthy instance that changes is no news; a weight is.
	c.push(appInst(1, 1, true, true), appInst(2, 1, true, true), appInst(3, 7, true, false))
	c.push(appInst(1, 0.5, true, true), appInst(2, 1, true, true))
	if got := l.next(); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Fatalf("after 1's weight changed: %v", got)
	}
	select {
	case e := <-l.events:
		t.Fatalf("an event without news: %v", e)
	default:
	}
	if d.src.refs != 2 {
		t.Errorf("source held %d times, want 2 (the discovery, the subscription)", d.src.refs)
	}
}

// dubbo-go reads an application before it adds its listener, and misses
// what arrives between the two; a listener added here is told what the
// server has once it is subscribed, whatever GetInstances answered.
func TestAppDiscoveryListenerMissesNothingAfterTheRead(t *testing.T) {
	c := &fakeClient{list: []model.Instance{appInst(1, 1, true, true)}}
	d := fakeDiscovery(c)
	defer d.Destroy()
	if got := addrsOf(d.GetInstances(app)); !slices.Equal(got, []string{"127.0.0.1:1"}) {
		t.Fatalf("GetInstances = %v", got)
	}
	// 2 registers between the read and the listener.
	c.mu.Lock()
	c.list = append(c.list, appInst(2, 1, true, true))
	c.mu.Unlock()
	l := newAppListener()
	if err := d.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if got := l.next(); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Fatalf("first event %v, want both", got)
	}
}

// serviceInfo is the metadata of the greeter service with params.
func serviceInfo(params map[string]string) *info.ServiceInfo {
	return info.NewServiceInfo("org.dubbogo.lb.samples.Greeter", "", "", "tri", "org.dubbogo.lb.samples.Greeter", params)
}

// The provider URL keeps the provider's own weight and carries the factor
// of the exact Nacos weight, which the balancers' parser multiplies in.
func TestAppInstanceURLWeight(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name        string
		nacosWeight float64
		params      map[string]string
		wantWeight  string // "" for none
		want        float64
	}{
		{"dubbo-go unedited", 1, map[string]string{"weight": "3", "release": "dubbo-golang-3.3.2"}, "3", 3},
		{"dubbo-go halved", 0.5, map[string]string{"weight": "3", "release": "dubbo-golang-3.3.2"}, "3", 1.5},
		{"dubbo-go drained", 0, map[string]string{"weight": "3", "release": "dubbo-golang-3.3.2"}, "3", 0},
		{"java doubled", 2, map[string]string{"weight": "100", "release": "3.3.6"}, "100", 200},
		{"java without weight", 1, map[string]string{"release": "3.3.6"}, "", warmup.DefaultWeight},
		{"unknown registrant", 40, map[string]string{"weight": "7"}, "7", 7},
	} {
		in := appInst(1, c.nacosWeight, true, true)
		in.Metadata["dubbo.endpoints"] = `[{"port":20001,"protocol":"tri"}]`
		urls := newAppInstance(app, "G", in).ToURLs(serviceInfo(c.params))
		if len(urls) != 1 || urls[0].Port != "20001" {
			t.Fatalf("%s: URLs %v, want one at the tri endpoint 20001", c.name, urls)
		}
		u := urls[0]
		if got := u.GetParam("weight", ""); got != c.wantWeight {
			t.Errorf("%s: weight parameter %q, want the provider's %q", c.name, got, c.wantWeight)
		}
		if m := warmup.Parse(u, "", now); m.Weight != c.want || m.Problem != "" {
			t.Errorf("%s: weight %v (%s), want %v", c.name, m.Weight, m.Problem, c.want)
		}
	}
}

// A Java provider's timestamp, in its instance's metadata only, reaches the
// URL, so its warmup does; a timestamp in the service's parameters (a
// dubbo-go provider's) wins over the instance's.
func TestAppInstanceURLTimestamp(t *testing.T) {
	now := time.UnixMilli(1796099024580 + 10_000) // 10 s into a 30 s warmup
	for _, c := range []struct {
		name     string
		instTS   string // the instance's metadata timestamp, "" for none
		params   map[string]string
		wantTS   string
		wantFrom time.Time // zero: warm
	}{
		{"java", "1796099024580", map[string]string{"weight": "300", "warmup": "30000", "release": "3.3.6"},
			"1796099024580", time.UnixMilli(1796099024580)},
		{"dubbo-go", "1796099000000", map[string]string{"timestamp": "1796099020", "warmup": "30", "release": "dubbo-golang-3.3.2"},
			"1796099020", time.Unix(1796099020, 0)},
		{"none", "", map[string]string{"warmup": "30000", "release": "3.3.6"}, "", time.Time{}},
	} {
		in := appInst(1, 1, true, true)
		in.Metadata["dubbo.endpoints"] = `[{"port":20001,"protocol":"tri"}]`
		if c.instTS != "" {
			in.Metadata["timestamp"] = c.instTS
		}
		urls := newAppInstance(app, "G", in).ToURLs(serviceInfo(c.params))
		if len(urls) != 1 {
			t.Fatalf("%s: URLs %v, want one", c.name, urls)
		}
		if got := urls[0].GetParam("timestamp", ""); got != c.wantTS {
			t.Errorf("%s: timestamp %q, want %q", c.name, got, c.wantTS)
		}
		if m := warmup.Parse(urls[0], "", now); !m.Start.Equal(c.wantFrom) || m.Problem != "" {
			t.Errorf("%s: warmup start %v (%s), want %v", c.name, m.Start, m.Problem, c.wantFrom)
		}
	}
}

// fakeRegClient records the registrations of a naming client.
type fakeRegClient struct {
	naming_client.INamingClient
	batches [][]vo.RegisterInstanceParam
	gone    []vo.DeregisterInstanceParam
	closed  bool
	fail    bool // refuse every registration
	refuse  int  // registrations still to refuse
	tries   int  // registrations asked for
}

func (f *fakeRegClient) BatchRegisterInstance(p vo.BatchRegisterInstanceParam) (bool, error) {
	f.tries++
	if f.fail {
		return false, errors.New("refused")
	}
	if f.refuse > 0 {
		f.refuse--
		return false, errors.New("refused")
	}
	f.batches = append(f.batches, p.Instances)
	return true, nil
}

func (f *fakeRegClient) DeregisterInstance(p vo.DeregisterInstanceParam) (bool, error) {
	f.gone = append(f.gone, p)
	return true, nil
}

func (f *fakeRegClient) CloseClient() { f.closed = true }

// Registration as dubbo-go does it: per application in one batch, the id in
// the metadata, weight 1 unless the registry says otherwise, an instance
// registered again replacing itself.
func TestRegistration(t *testing.T) {
	u, _ := common.NewURL("service-discovery-registry://127.0.0.1:1?registry=nacos&registry.group=G&registry.weight=0")
	d := newAppDiscovery(u, Options{})
	fc := &fakeRegClient{}
	d.registration.newClient = func() (naming_client.INamingClient, error) { return fc, nil }
	a := &registry.DefaultServiceInstance{ID: "127.0.0.1:1", ServiceName: app, Host: "127.0.0.1", Port: 1, Enable: true, Healthy: true, Metadata: map[string]string{"k": "v"}}
	b := &registry.DefaultServiceInstance{ID: "127.0.0.1:2", ServiceName: app, Host: "127.0.0.1", Port: 2, Enable: true, Healthy: true}
	for _, in := range []registry.ServiceInstance{a, b, b} {
		if err := d.Register(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Update(a); err != nil {
		t.Fatal(err)
	}
	last := fc.batches[len(fc.batches)-1]
	if len(fc.batches) != 4 || len(last) != 2 {
		t.Fatalf("batches %v: want 4, the last with a and b once each", fc.batches)
	}
	for _, p := range last {
		if p.Weight != 1 || p.GroupName != "G" || !p.Ephemeral || p.Metadata[idKey] != p.Ip+":"+itoa(p.Port) || p.ClusterName != "" {
			t.Errorf("registration %+v: want weight 1, group G, ephemeral, id in the metadata, no cluster", p)
		}
	}
	if _, ok := a.Metadata[idKey]; ok {
		t.Error("the instance's own metadata was changed")
	}
	if err := d.Destroy(); err != nil {
		t.Fatal(err)
	}
	if len(fc.gone) != 3 || !fc.closed { // a's update, then a and b
		t.Errorf("deregistered %v, closed %v: want 3 and closed", fc.gone, fc.closed)
	}
	fc.fail = true
	d.registration.sleep = func(time.Duration) {}
	if err := d.Register(a); err == nil {
		t.Error("a refused registration returned no error")
	}
}

// A registration that Nacos refuses is tried again as Dubbo Java's Nacos
// registry does (keepertest.RetryCases): nacos.retry more times, the first
// nacos.retry-wait ms later, then tripling.
func TestFailedAppRegistrationIsTriedAgain(t *testing.T) {
	for _, c := range keepertest.RetryCases {
		t.Run(c.Name, func(t *testing.T) {
			u, _ := common.NewURL("service-discovery-registry://127.0.0.1:1?registry=nacos" + c.Params)
			d := newAppDiscovery(u, Options{})
			fc := &fakeRegClient{refuse: c.Fail}
			d.registration.newClient = func() (naming_client.INamingClient, error) { return fc, nil }
			var waits []time.Duration
			d.registration.sleep = func(w time.Duration) { waits = append(waits, w) }
			in := &registry.DefaultServiceInstance{ID: "127.0.0.1:1", ServiceName: app, Host: "127.0.0.1", Port: 1, Enable: true, Healthy: true}
			err := d.Register(in)
			if (err == nil) != c.OK {
				t.Fatalf("Register: %v; want success %v", err, c.OK)
			}
			if !c.OK && c.Tries > 1 && !strings.Contains(err.Error(), "nacos.retry") {
				t.Errorf("error %q does not name nacos.retry", err)
			}
			if fc.tries != c.Tries {
				t.Errorf("%d tries; want %d", fc.tries, c.Tries)
			}
			c.CheckWaits(t, waits)
			if got := len(d.registration.byService[app]); c.OK != (got == 1) {
				t.Errorf("%d instances recorded after the registration (success %v)", got, c.OK)
			}
		})
	}
}

func TestRegisteredWeight(t *testing.T) {
	for _, c := range []struct {
		instance int64
		registry string
		want     float64
	}{
		{100, "", 100}, {100, "0", 1}, {100, "5", 5}, {100, "2.5", 2.5}, {100, "-3", 1},
		{100, "x", 100}, {0, "", 1}, {100, "1e9", 10000}, {100, "NaN", 1},
	} {
		if got := registeredWeight(c.instance, c.registry); got != c.want {
			t.Errorf("registeredWeight(%d, %q) = %v, want %v", c.instance, c.registry, got, c.want)
		}
	}
}

// A provider's zone reaches its URL at both levels: its own lb.zone
// parameter, else its Nacos cluster name, never Nacos's DEFAULT.
func TestProviderURLZone(t *testing.T) {
	for _, c := range []struct {
		name, cluster, param, want string
	}{
		{"cluster", "zone-a", "", "zone-a"},
		{"default cluster", "DEFAULT", "", ""},
		{"no cluster", "", "", ""},
		{"own parameter wins", "zone-a", "zone-b", "zone-b"},
		{"own parameter, default cluster", "DEFAULT", "zone-b", "zone-b"},
	} {
		// Interface level: the parameter travels as metadata.
		in := model.Instance{Ip: "127.0.0.1", Port: 20001, Weight: 1, Enable: true, Healthy: true, ClusterName: c.cluster,
			Metadata: map[string]string{"interface": "org.dubbogo.lb.samples.Greeter", "protocol": "tri"}}
		if c.param != "" {
			in.Metadata["lb.zone"] = c.param
		}
		u, err := providerURL(in)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, u.GetParam("lb.zone", ""), "interface level: %s", c.name)

		// Application level: the parameter is the service's.
		ai := appInst(1, 1, true, true)
		ai.ClusterName = c.cluster
		ai.Metadata["dubbo.endpoints"] = `[{"port":20001,"protocol":"tri"}]`
		params := map[string]string{"release": "3.3.6"}
		if c.param != "" {
			params["lb.zone"] = c.param
		}
		urls := newAppInstance(app, "G", ai).Copy(&registry.Endpoint{Port: 20001, Protocol: "tri"}).(*appInstance).ToURLs(serviceInfo(params))
		require.Len(t, urls, 1, c.name)
		assert.Equal(t, c.want, urls[0].GetParam("lb.zone", ""), "application level: %s", c.name)
	}
}

// A provider's zone, the registry param lb.zone, is its instance's Nacos
// cluster, which consumers read back as its zone.
func TestRegistrationZone(t *testing.T) {
	u, _ := common.NewURL("service-discovery-registry://127.0.0.1:1?registry=nacos&registry.group=G&lb.zone=az-1")
	d := newAppDiscovery(u, Options{})
	fc := &fakeRegClient{}
	d.registration.newClient = func() (naming_client.INamingClient, error) { return fc, nil }
	require.NoError(t, d.Register(&registry.DefaultServiceInstance{ID: "127.0.0.1:1", ServiceName: app, Host: "127.0.0.1", Port: 1, Enable: true, Healthy: true}))
	require.Len(t, fc.batches, 1)
	require.Len(t, fc.batches[0], 1)
	assert.Equal(t, "az-1", fc.batches[0][0].ClusterName)
	require.NoError(t, d.Destroy())
}
