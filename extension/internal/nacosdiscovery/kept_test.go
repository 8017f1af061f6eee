package nacosdiscovery

import (
	"errors"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/registry"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
)

// The registrations list what is registered and not withdrawn, and take a
// discovery back when it registers after its Destroy; registering again
// batches the application's whole list through the same client.
func TestRegistrationsListWhatIsRegistered(t *testing.T) {
	regs := new(Registrations)
	fc := &fakeRegClient{}
	u, _ := common.NewURL("service-discovery-registry://127.0.0.1:1?registry=nacos&registry.group=G")
	d := newAppDiscovery(u, Options{Registrations: regs, NamingClient: func(*common.URL) (naming_client.INamingClient, error) { return fc, nil }})
	if got := regs.List(); len(got) != 0 {
		t.Fatalf("listed %v before any registration", got)
	}
	a := &registry.DefaultServiceInstance{ID: "a", ServiceName: app, Host: "127.0.0.1", Port: 1, Enable: true, Healthy: true}
	b := &registry.DefaultServiceInstance{ID: "b", ServiceName: app, Host: "127.0.0.1", Port: 2, Enable: true, Healthy: true}
	for _, in := range []registry.ServiceInstance{a, b} {
		if err := d.Register(in); err != nil {
			t.Fatal(err)
		}
	}
	list := regs.List()
	if len(list) != 2 || list[0].Addr != "127.0.0.1:1" || list[1].Addr != "127.0.0.1:2" || list[0].Group != "G" || list[0].Service != app || list[0].ID == list[1].ID || list[0].Reader == nil {
		t.Fatalf("listed %+v; want a and b of %s in G", list, app)
	}
	if err := list[1].Register(); err != nil {
		t.Fatal(err)
	}
	if last := fc.batches[len(fc.batches)-1]; len(fc.batches) != 3 || len(last) != 2 {
		t.Fatalf("batches %v: want a third with a and b", fc.batches)
	}
	if err := d.Destroy(); err != nil {
		t.Fatal(err)
	}
	if got := regs.List(); len(got) != 0 {
		t.Fatalf("listed %v after Destroy", got)
	}
	if err := list[0].Register(); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("registered again after Destroy: %v", err)
	}
	if err := d.Register(a); err != nil {
		t.Fatal(err)
	}
	if got := regs.List(); len(got) != 1 || got[0].Addr != "127.0.0.1:1" {
		t.Fatalf("listed %+v after registering a again; want a", got)
	}
	var none *Registrations
	none.add(&d.registration)
	if none.List() != nil {
		t.Fatal("a nil Registrations listed something")
	}
}

// Registering again sends what was registered, not the instance's metadata
// of the moment: dubbo-go changes that map (outside our lock) before it
// calls Update, and a repair in between must neither read it (a data race)
// nor register what dubbo-go has not handed over yet.
func TestRegisterAgainSendsWhatWasRegistered(t *testing.T) {
	regs := new(Registrations)
	fc := &fakeRegClient{}
	u, _ := common.NewURL("service-discovery-registry://127.0.0.1:1?registry=nacos&registry.group=G")
	d := newAppDiscovery(u, Options{Registrations: regs, NamingClient: func(*common.URL) (naming_client.INamingClient, error) { return fc, nil }})
	a := &registry.DefaultServiceInstance{ID: "a", ServiceName: app, Host: "127.0.0.1", Port: 1, Enable: true, Healthy: true,
		Metadata: map[string]string{"dubbo.metadata.revision": "r1"}}
	if err := d.Register(a); err != nil {
		t.Fatal(err)
	}
	a.Metadata["dubbo.metadata.revision"] = "r2" // dubbo-go, before its Update
	if err := regs.List()[0].Register(); err != nil {
		t.Fatal(err)
	}
	if got := fc.batches[len(fc.batches)-1][0].Metadata["dubbo.metadata.revision"]; got != "r1" {
		t.Fatalf("registered again with revision %q, want r1, the one registered", got)
	}
	if err := d.Update(a); err != nil {
		t.Fatal(err)
	}
	if got := fc.batches[len(fc.batches)-1][0].Metadata["dubbo.metadata.revision"]; got != "r2" {
		t.Fatalf("Update registered revision %q, want r2", got)
	}
}
