package nacoskeeper

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/registry"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"

	"github.com/dubbogo-lb/lb/extension/internal/keeper"
	"github.com/dubbogo-lb/lb/extension/internal/keeper/keepertest"
	"github.com/dubbogo-lb/lb/extension/internal/nacosdiscovery"
)

// fakeNaming is the Nacos client of an application-level discovery: a
// batch replaces the service's instances in the fake Nacos, as a Nacos
// client's batch registration replaces its list.
type fakeNaming struct {
	naming_client.INamingClient
	nacos   *fakeNacos
	mu      sync.Mutex
	batches []vo.BatchRegisterInstanceParam
}

func (f *fakeNaming) BatchRegisterInstance(p vo.BatchRegisterInstanceParam) (bool, error) {
	f.mu.Lock()
	f.batches = append(f.batches, p)
	f.mu.Unlock()
	hosts := make([]map[string]any, 0, len(p.Instances))
	for _, in := range p.Instances {
		hosts = append(hosts, map[string]any{"ip": in.Ip, "port": in.Port, "weight": in.Weight, "healthy": true, "enabled": true, "metadata": in.Metadata})
	}
	f.nacos.mu.Lock()
	f.nacos.hosts[p.GroupName+"@@"+p.ServiceName] = hosts
	f.nacos.mu.Unlock()
	return true, nil
}

func (f *fakeNaming) DeregisterInstance(p vo.DeregisterInstanceParam) (bool, error) {
	f.nacos.lose(p.GroupName, p.ServiceName, p.Port)
	return true, nil
}

func (f *fakeNaming) CloseClient() {}

func (f *fakeNaming) registered() []vo.BatchRegisterInstanceParam {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]vo.BatchRegisterInstanceParam(nil), f.batches...)
}

// lose removes the instance at port from service, behind its client's back.
func (n *fakeNacos) lose(group, service string, port uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := group + "@@" + service
	var keep []map[string]any
	for _, h := range n.hosts[key] {
		if h["port"] != port {
			keep = append(keep, h)
		}
	}
	n.hosts[key] = keep
}

// appSetup registers, through our application-level discovery of the
// fake Nacos (group G), the instances at ports 1 and 2 of application
// "app" and the one at port 3 of "other".
func appSetup(t *testing.T) (*fakeNacos, *fakeNaming, registry.ServiceDiscovery, *nacosdiscovery.Registrations, []registry.ServiceInstance) {
	t.Helper()
	n := newFakeNacos(t)
	fc := &fakeNaming{nacos: n}
	regs := new(nacosdiscovery.Registrations)
	u, err := common.NewURL("service-discovery-registry://" + n.addr() + "?registry=nacos&registry.group=G&registry.weight=0")
	if err != nil {
		t.Fatal(err)
	}
	d, err := nacosdiscovery.NewServiceDiscovery(nacosdiscovery.Options{
		Registrations: regs,
		NamingClient:  func(*common.URL) (naming_client.INamingClient, error) { return fc, nil },
	})(u)
	if err != nil {
		t.Fatal(err)
	}
	var ins []registry.ServiceInstance
	for _, c := range []struct {
		app  string
		port int
	}{{"app", 1}, {"app", 2}, {"other", 3}} {
		in := &registry.DefaultServiceInstance{
			ID: "127.0.0.1:" + strconv.Itoa(c.port), ServiceName: c.app, Host: "127.0.0.1", Port: c.port, Enable: true, Healthy: true,
			Metadata: map[string]string{"dubbo.metadata.revision": "r" + strconv.Itoa(c.port)},
		}
		if err := d.Register(in); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	t.Cleanup(func() { _ = d.Destroy() })
	return n, fc, d, regs, ins
}

// An application-level instance the server lost is registered again after
// two reads without it, through the discovery's client, in one batch with
// the other instance of its application (a batch replaces the client's
// list: alone, it would drop that one), each as first registered.
func TestKeeperRegistersALostApplicationInstanceAgainWithItsApplication(t *testing.T) {
	n, fc, _, regs, _ := appSetup(t)
	kept := apps{regs}.Kept()
	if len(kept) != 3 || kept[0].Service != "app" || kept[0].Group != "G" || kept[0].Addr != "127.0.0.1:1" || kept[2].Addr != "127.0.0.1:3" {
		t.Fatalf("kept %+v; want app at :1 and :2, other at :3, group G", kept)
	}
	first := fc.registered()[1] // app's batch with both instances
	n.lose("G", "app", 1)

	clock := keepertest.NewClock()
	var warned []string
	k := keeper.New(keeper.Sources{apps{regs}}, keeper.Options{Interval: time.Second, Clock: clock, Warnf: func(f string, _ ...any) { warned = append(warned, f) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	<-clock.Waits
	clock.Fire <- time.Time{} // the first read: missing once
	<-clock.Waits
	if got := len(fc.registered()); got != 3 {
		t.Fatalf("%d batches after one read without the instance; want dubbo-go's 3", got)
	}
	clock.Fire <- time.Time{} // the second: registered again
	<-clock.Waits
	cancel()
	<-done

	batches := fc.registered()
	if len(batches) != 4 || len(warned) != 1 {
		t.Fatalf("%d batches, %d warnings after two reads without the instance; want 4 and 1", len(batches), len(warned))
	}
	again := batches[3]
	if again.ServiceName != "app" || again.GroupName != "G" || len(again.Instances) != 2 {
		t.Fatalf("registered again %+v; want app's two instances in group G", again)
	}
	for i, p := range again.Instances {
		w := first.Instances[i]
		if p.Ip != w.Ip || p.Port != w.Port || p.Weight != w.Weight || !p.Ephemeral || !maps.Equal(p.Metadata, w.Metadata) {
			t.Errorf("instance %d registered again as %+v; want as first registered, %+v", i, p, w)
		}
	}
	n.mu.Lock()
	listed := len(n.hosts["G@@app"])
	n.mu.Unlock()
	if listed != 2 {
		t.Fatalf("the server lists %d instances of app; want both", listed)
	}
}

// An instance the provider unregistered, or whose discovery it destroyed
// (graceful shutdown), is never registered again, even when it was listed
// before the withdrawal and registered after.
func TestKeeperNeverRegistersAWithdrawnApplicationInstance(t *testing.T) {
	n, fc, d, regs, ins := appSetup(t)
	k := keeper.New(apps{regs}, keeper.Options{Warnf: func(string, ...any) {}})
	listed := apps{regs}.Kept()
	if err := d.Unregister(ins[0]); err != nil {
		t.Fatal(err)
	}
	if got := len(apps{regs}.Kept()); got != 2 {
		t.Fatalf("kept %d after one was unregistered; want 2", got)
	}
	if err := listed[0].Register(); !errors.Is(err, nacosdiscovery.ErrWithdrawn) {
		t.Fatalf("registering an unregistered instance again: %v; want ErrWithdrawn", err)
	}
	for range 3 {
		if k.Check() != 0 {
			t.Fatal("registered an unregistered instance again")
		}
	}

	before := len(fc.registered())
	if err := d.Destroy(); err != nil {
		t.Fatal(err)
	}
	if got := len(apps{regs}.Kept()); got != 0 {
		t.Fatalf("kept %d after Destroy; want 0", got)
	}
	n.lose("G", "other", 3)
	for _, r := range listed[1:] {
		if err := r.Register(); !errors.Is(err, nacosdiscovery.ErrWithdrawn) {
			t.Fatalf("registering %s again after Destroy: %v; want ErrWithdrawn", r.Addr, err)
		}
	}
	for range 3 {
		k.Check()
	}
	if got := len(fc.registered()); got != before {
		t.Fatalf("%d batches after Destroy; want none after it", got-before)
	}
}

// One keeper keeps both levels: the sources' registrations side by side.
func TestKeeperKeepsBothLevels(t *testing.T) {
	n, _, w, _ := setup(t)
	exportTo(t, w, n, "", "org.example.A")
	_, _, _, regs, _ := appSetup(t)
	kept := keeper.Sources{w, apps{regs}}.Kept()
	if len(kept) != 4 || kept[0].Service != "providers:org.example.A::" || kept[1].Service != "app" || kept[0].ID == kept[1].ID {
		t.Fatalf("kept %+v; want the interface and the 3 application-level ones", kept)
	}
}
