package nacosdiscovery

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/registry"
	"dubbo.apache.org/dubbo-go/v3/remoting"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// consumers is the Nacos service of the greeter's consumers.
const consumers = "consumers:" + iface + "::"

// servicesClient is a fake Nacos client with one fakeClient per service.
type servicesClient struct {
	fakeClient // the methods not faked below
	by         map[string]*fakeClient
}

func newServicesClient() *servicesClient {
	return &servicesClient{by: map[string]*fakeClient{service: {}, consumers: {}}}
}

func (c *servicesClient) Subscribe(p *vo.SubscribeParam) error {
	return c.by[p.ServiceName].Subscribe(p)
}
func (c *servicesClient) instances(service, group string) ([]model.Instance, error) {
	return c.by[service].instances(service, group)
}

// consumerRef is a reference to the greeter with lb.subset.size size and
// lb.subset.mode mode ("": unset), marked as its consumer.
func consumerRef(t tb, size int, mode string) *common.URL {
	u := consumerURL(t)
	if size > 0 {
		u.SetParam(urlparam.SubsetSizeKey, strconv.Itoa(size))
	}
	if mode != "" {
		u.SetParam(urlparam.SubsetModeKey, mode)
	}
	urlparam.MarkConsumer(u)
	return u
}

// subsetConsumer is one consumer of the greeter through c, registered
// (as far as its position goes) at self.
type subsetConsumer struct {
	sub *subscription
	rec *recorder
}

func newSubsetConsumer(t *testing.T, c *servicesClient, ref *common.URL, self string) subsetConsumer {
	t.Helper()
	o := Options{}.withDefaults()
	src := &source{key: "fake", sdk: c, api: c, refs: 1, feeds: map[string]*feed{}}
	rec := newRecorder()
	sub := newSubscription(src, ref, rec, "G", o)
	if sub.subset != nil {
		sub.subset.self = self
	}
	t.Cleanup(func() { _ = sub.close() })
	if err := sub.load(); err != nil {
		t.Fatal(err)
	}
	return subsetConsumer{sub, rec}
}

// refresh applies what the fake client pushed since, as follow would.
func (sc subsetConsumer) refresh(t *testing.T) {
	t.Helper()
	if sc.sub.peers != nil {
		if err := sc.sub.peers.apply(); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.sub.apply(); err != nil {
		t.Fatal(err)
	}
}

func providers(n int) []model.Instance {
	out := make([]model.Instance, n)
	for i := range out {
		out[i] = instance(uint64(20001+i), true, true)
	}
	return out
}

func consumerInstances(n int) []model.Instance {
	out := make([]model.Instance, n)
	for i := range out {
		out[i] = model.Instance{Ip: "10.0.0." + strconv.Itoa(i+1), Port: 80, Enable: true, Healthy: true,
			Metadata: map[string]string{urlparam.SubsetSizeKey: "2"}}
	}
	return out
}

// Off by default: the reference without lb.subset.size is told of every
// provider, even when the providers register lb.subset.size themselves.
func TestSubsetIsOffByDefault(t *testing.T) {
	c := newServicesClient()
	list := providers(6)
	for i := range list {
		list[i].Metadata[urlparam.SubsetSizeKey] = "1"
	}
	c.by[service].list = list
	sc := newSubsetConsumer(t, c, consumerRef(t, 0, ""), "")
	if sc.sub.subset != nil || sc.sub.peers != nil {
		t.Fatal("subsetting on without lb.subset.size")
	}
	if got := len(sc.rec.providers()); got != 6 {
		t.Fatalf("told of %d providers, want all 6: %v", got, sc.rec.providers())
	}
}

// Consumers registered in Nacos place each consumer on the aperture's
// ring: 4 consumers of 8 providers with lb.subset.size 2 hold 2 each, and
// every provider is held by exactly one of them.
func TestSubsetApertureFromTheConsumersRegistrations(t *testing.T) {
	c := newServicesClient()
	c.by[service].list = providers(8)
	cons := consumerInstances(4)
	// A consumer of the whole set and one that ranks by rendezvous take no
	// place on the ring.
	c.by[consumers].list = append(slices.Clone(cons),
		model.Instance{Ip: "10.0.1.1", Port: 80, Enable: true, Healthy: true},
		model.Instance{Ip: "10.0.1.2", Port: 80, Enable: true, Healthy: true, Metadata: map[string]string{urlparam.SubsetSizeKey: "2", urlparam.SubsetModeKey: "rendezvous"}})
	holders := map[string]int{}
	for _, in := range cons {
		sc := newSubsetConsumer(t, c, consumerRef(t, 2, ""), hostOf(in))
		held := sc.rec.providers()
		if len(held) != 2 {
			t.Errorf("consumer %s holds %v, want 2", hostOf(in), held)
		}
		for _, p := range held {
			holders[p]++
		}
		st := sc.sub.subset.snapshot()
		if st.Mode != describe.SubsetAperture || st.Count != 4 || st.Held != 2 || st.Total != 8 || !slices.Equal(st.Members, held) {
			t.Errorf("consumer %s: describe says %+v, holding %v", hostOf(in), st, held)
		}
	}
	if len(holders) != 8 || slices.Max(slices.Collect(maps.Values(holders))) != 1 {
		t.Errorf("holders per provider %v, want each of the 8 held once", holders)
	}
}

// A consumer that finds no consumer listed ranks the providers by
// rendezvous hashing, seeded with its own ID: consumers with different IDs
// hold different subsets (negative control of the aperture test above),
// and lb.subset.mode rendezvous ignores the consumers listed.
func TestSubsetRendezvousWhenTheConsumersAreUnknown(t *testing.T) {
	c := newServicesClient()
	c.by[service].list = providers(20)
	subsets := map[string]bool{}
	for i := range 4 {
		sc := newSubsetConsumer(t, c, consumerRef(t, 3, ""), "")
		sc.sub.subset.id = fmt.Sprintf("consumer-%d", i)
		sc.refresh(t)
		held := sc.rec.providers()
		if len(held) != 3 || sc.sub.subset.snapshot().Mode != describe.SubsetRendezvous {
			t.Fatalf("consumer %d holds %v (%+v), want 3 by rendezvous", i, held, sc.sub.subset.snapshot())
		}
		subsets[fmt.Sprint(held)] = true
	}
	if len(subsets) < 2 {
		t.Errorf("4 consumers with different IDs all hold %v", subsets)
	}
	c.by[consumers].list = consumerInstances(3)
	sc := newSubsetConsumer(t, c, consumerRef(t, 3, urlparam.SubsetRendezvous), "10.0.0.1:80")
	if st := sc.sub.subset.snapshot(); st.Mode != describe.SubsetRendezvous || st.Held != 3 {
		t.Errorf("mode rendezvous: %+v", st)
	}
}

// A provider that leaves is replaced in the subsets that held it, by one
// provider each, and no other subset changes (rendezvous); an unhealthy
// member is passed over the same way and comes back when healthy.
func TestSubsetReplacesALeavingProviderInTheSubsetsThatHeldIt(t *testing.T) {
	c := newServicesClient()
	list := providers(12)
	c.by[service].list = list
	var cs []subsetConsumer
	for i := range 6 {
		sc := newSubsetConsumer(t, c, consumerRef(t, 3, ""), "")
		sc.sub.subset.id = fmt.Sprintf("consumer-%d", i)
		sc.refresh(t)
		cs = append(cs, sc)
	}
	before := make([][]string, len(cs))
	for i, sc := range cs {
		before[i] = sc.rec.providers()
	}
	gone := before[0][1]
	c.by[service].push(slices.DeleteFunc(slices.Clone(list), func(in model.Instance) bool { return hostOf(in) == gone })...)
	for i, sc := range cs {
		sc.refresh(t)
		after := sc.rec.providers()
		if !slices.Contains(before[i], gone) {
			if !slices.Equal(after, before[i]) {
				t.Errorf("consumer %d did not hold %s, but its subset moved from %v to %v", i, gone, before[i], after)
			}
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(before[i]), func(h string) bool { return h == gone })
		added := slices.DeleteFunc(slices.Clone(after), func(h string) bool { return slices.Contains(kept, h) })
		if len(after) != 3 || slices.Contains(after, gone) || len(added) != 1 {
			t.Errorf("consumer %d held %s: %v became %v, want it replaced by one", i, gone, before[i], after)
		}
	}

	// Unhealthy: passed over, the others kept; healthy again: back.
	sc := cs[1]
	held := sc.rec.providers()
	sick := held[0]
	next := slices.Clone(c.by[service].list)
	for i := range next {
		if hostOf(next[i]) == sick {
			next[i].Healthy = false
		}
	}
	c.by[service].push(next...)
	sc.refresh(t)
	after := sc.rec.providers()
	if len(after) != 3 || slices.Contains(after, sick) || !slices.Contains(after, held[1]) || !slices.Contains(after, held[2]) {
		t.Errorf("%s unhealthy: %v became %v, want it passed over and the rest kept", sick, held, after)
	}
	st := sc.sub.subset.snapshot()
	if st.Held != 4 || st.Serving != 3 {
		t.Errorf("with one member unhealthy describe says held %d, serving %d; want 4 and 3", st.Held, st.Serving)
	}
	for i := range next {
		next[i].Healthy = true
	}
	c.by[service].push(next...)
	sc.refresh(t)
	if got := sc.rec.providers(); !slices.Equal(got, held) {
		t.Errorf("healthy again: %v, want %v", got, held)
	}
}

// A member that outlier detection ejects stays held (its ejection runs
// on) and the subset grows past it; when it returns, the extra member goes.
func TestSubsetGrowsPastEjectedMembers(t *testing.T) {
	c := newServicesClient()
	c.by[service].list = providers(10)
	ref := consumerRef(t, 2, "")
	sc := newSubsetConsumer(t, c, ref, "")
	held := sc.rec.providers()
	if len(held) != 2 {
		t.Fatalf("holds %v, want 2", held)
	}
	// The invoker URL of the first member, as dubbo-go's merge makes it.
	u := sc.rec.last(held[0]).MergeURL(ref)
	stats := rpcstatus.Of(u).Method("Hello")
	if sc.sub.subset.checkEjections() {
		t.Fatal("nothing is ejected yet")
	}
	stats.Ejected()
	if !sc.sub.subset.checkEjections() {
		t.Fatal("the ejection was not seen")
	}
	sc.refresh(t)
	grown := sc.rec.providers()
	if len(grown) != 3 || !slices.Contains(grown, held[0]) || !slices.Contains(grown, held[1]) {
		t.Fatalf("with %s ejected: %v, want %v and one more", held[0], grown, held)
	}
	stats.Returned()
	if !sc.sub.subset.checkEjections() {
		t.Fatal("the return was not seen")
	}
	sc.refresh(t)
	if got := sc.rec.providers(); !slices.Equal(got, held) {
		t.Errorf("after the return: %v, want %v", got, held)
	}
	_ = u // the statistics live while u does
}

// Subsets lists every reference that subsets, for the live page and the
// metrics; a closed one is gone.
func TestSubsetsListsTheLiveSubsets(t *testing.T) {
	c := newServicesClient()
	c.by[service].list = providers(5)
	sc := newSubsetConsumer(t, c, consumerRef(t, 2, ""), "")
	found := slices.ContainsFunc(Subsets(), func(s describe.Subset) bool {
		return s.Service == sc.sub.subset.key && s.Held == 2 && s.Registry == levelInterface
	})
	if !found {
		t.Fatalf("Subsets() = %+v, without the reference's", Subsets())
	}
	_ = sc.sub.close()
	for _, s := range Subsets() {
		if s.Service == sc.sub.subset.key {
			t.Errorf("closed, still listed: %+v", s)
		}
	}
}

// The application level: the listener between dubbo-go's instance
// listener and a reference's directory passes on the members held only,
// and again when the ejected members change.
func TestAppLevelSubsetListener(t *testing.T) {
	rec := newRecorder()
	l := &subsetListener{NotifyListener: rec, subset: newSubsetting(consumerRef(t, 2, ""), urlparam.Subset{Size: 2, Mode: urlparam.SubsetAuto}, levelApplication), done: make(chan struct{})}
	defer l.close()
	var events []*registry.ServiceEvent
	for _, in := range providers(7) {
		u, err := providerURL(in)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, &registry.ServiceEvent{Action: remoting.EventTypeAdd, Service: u})
	}
	l.NotifyAll(events, nil)
	if got := rec.providers(); len(got) != 2 {
		t.Fatalf("told of %v, want 2 of the 7", got)
	}
	st := l.subset.snapshot()
	if st.Registry != levelApplication || st.Total != 7 || st.Held != 2 || st.Mode != describe.SubsetRendezvous {
		t.Errorf("describe says %+v", st)
	}
}
