package nacosdiscovery

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"

	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// fakeClient is a Nacos client with a list held in memory. As the real one
// does, Subscribe calls the new callback from within with the list.
type fakeClient struct {
	naming_client.INamingClient // the methods not faked panic

	mu        sync.Mutex
	list      []model.Instance
	callbacks []func([]model.Instance, error)
	failSub   int // Subscribe calls left to fail
	failAPI   int // server reads (instances) left to fail
}

func (f *fakeClient) Subscribe(p *vo.SubscribeParam) error {
	f.mu.Lock()
	f.callbacks = append(f.callbacks, p.SubscribeCallback)
	if f.failSub > 0 {
		f.failSub--
		f.mu.Unlock()
		return errors.New("client not connected")
	}
	list := slices.Clone(f.list)
	f.mu.Unlock()
	p.SubscribeCallback(list, nil)
	return nil
}

func (f *fakeClient) Unsubscribe(*vo.SubscribeParam) error { return nil }
func (f *fakeClient) CloseClient()                         {}

// instances is the server's answer: the list, without calling back.
func (f *fakeClient) instances(string, string) ([]model.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAPI > 0 {
		f.failAPI--
		return nil, errors.New("context deadline exceeded")
	}
	return slices.Clone(f.list), nil
}

// push replaces the list and calls back, as a push from Nacos does.
func (f *fakeClient) push(list ...model.Instance) {
	f.mu.Lock()
	f.list = list
	cbs := slices.Clone(f.callbacks)
	f.mu.Unlock()
	for _, cb := range cbs {
		cb(slices.Clone(list), nil)
	}
}

func instance(port uint64, enabled, healthy bool, md ...string) model.Instance {
	m := map[string]string{"interface": iface, "protocol": "tri"}
	for i := 0; i+1 < len(md); i += 2 {
		m[md[i]] = md[i+1]
	}
	return model.Instance{Ip: "127.0.0.1", Port: port, Enable: enabled, Healthy: healthy, Metadata: m}
}

// fakeSubscription is a subscription through a source over c.
func fakeSubscription(c *fakeClient, rec *recorder) *subscription {
	return fakeSubscriptionWith(c, rec, Options{})
}

// fakeSubscriptionWith is fakeSubscription with options o.
func fakeSubscriptionWith(c *fakeClient, rec *recorder, o Options) *subscription {
	return fakeSubscriptionKeeping(c, rec, o, false)
}

// fakeSubscriptionKeeping is fakeSubscriptionWith on a source that keeps
// the last usable list (nacos.updateCacheWhenEmpty=false) when keep.
func fakeSubscriptionKeeping(c *fakeClient, rec *recorder, o Options, keep bool) *subscription {
	o = o.withDefaults()
	src := &source{key: "fake", sdk: c, api: c, refs: 1, feeds: map[string]*feed{}, keepOnEmpty: keep}
	sub := &subscription{src: src, listener: rec, opts: o, wake: make(chan struct{}, 1), done: make(chan struct{})}
	sub.feed = src.watch(service, "G", sub, o)
	return sub
}

func TestSubscriptionTellsTheListenerWhatChanged(t *testing.T) {
	c := &fakeClient{list: []model.Instance{
		instance(1, true, true), instance(2, true, true, "weight", "1"),
		instance(3, false, true), instance(4, true, false),
		{Ip: "127.0.0.1", Port: 5, Enable: true, Healthy: true, Metadata: map[string]string{"interface": iface}}, // no protocol
	}}
	rec := newRecorder()
	sub := fakeSubscription(c, rec)
	if err := sub.load(); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.providers(), []string{"127.0.0.1:1", "127.0.0.1:2"}; !slices.Equal(got, want) {
		t.Fatalf("after load: %v, want the enabled, healthy, valid %v (events %v)", got, want, rec.log())
	}
	sub.subscribe()
	defer sub.close()

	// 1 goes away, 2's weight changes, 3 is enabled, 4 turns healthy.
	c.push(instance(2, true, true, "weight", "3"), instance(3, true, true), instance(4, true, true))
	if !rec.waitProviders(10*time.Second, "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4") {
		t.Fatalf("after the push: %v (events %v)", rec.providers(), rec.log())
	}
	if !slices.Contains(rec.log(), "update 127.0.0.1:2") {
		t.Errorf("the weight change of 2 was not an update: %v", rec.log())
	}
	// 3 is disabled, 4 turns unhealthy: both leave.
	c.push(instance(2, true, true, "weight", "3"), instance(3, false, true), instance(4, true, false))
	if !rec.waitProviders(10*time.Second, "127.0.0.1:2") {
		t.Fatalf("after disabling 3 and 4 turning unhealthy: %v (events %v)", rec.providers(), rec.log())
	}
	for _, e := range rec.log() {
		if strings.HasSuffix(e, ":5") {
			t.Errorf("an instance without a protocol was announced: %v", rec.log())
		}
	}
}

// The real client calls back from within Subscribe: that must not
// deadlock load, nor the retries after a failed Subscribe.
func TestCallbackFromWithinSubscribe(t *testing.T) {
	c := &fakeClient{list: []model.Instance{instance(1, true, true)}, failSub: 1}
	rec := newRecorder()
	sub := fakeSubscription(c, rec)
	done := make(chan error, 1)
	go func() { done <- sub.load() }() // Subscribe fails
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("load with a failing subscription returned no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("load deadlocked")
	}
	go sub.subscribe() // succeeds, calling back from within
	defer sub.close()
	if !rec.waitProviders(30*time.Second, "127.0.0.1:1") {
		t.Fatalf("after subscribing: %v (events %v)", rec.providers(), rec.log())
	}
}

// An operator's edit of the Nacos weight alone (the metadata unchanged) is
// an update, whose URL carries the new weight factor.
func TestSubscriptionUpdatesOnANacosWeightChange(t *testing.T) {
	in := instance(1, true, true, "release", "3.3.6", "weight", "100")
	in.Weight = 1
	c := &fakeClient{list: []model.Instance{in}}
	rec := newRecorder()
	sub := fakeSubscription(c, rec)
	if err := sub.load(); err != nil {
		t.Fatal(err)
	}
	sub.subscribe()
	defer sub.close()
	in.Weight = 2.5
	c.push(in)
	if !rec.waitEvent(10*time.Second, "update 127.0.0.1:1") {
		t.Fatalf("no update after the weight change: %v", rec.log())
	}
	if got := rec.last("127.0.0.1:1").GetParam(urlparam.WeightFactorKey, ""); got != "2.5" {
		t.Errorf("weight factor %q after the edit, want 2.5", got)
	}
}

// TestProviderURLReadsJavaMethodBalancer: a Java provider's
// <method>.loadbalance reaches dubbo-go's cluster as
// methods.<method>.loadbalance.
func TestProviderURLReadsJavaMethodBalancer(t *testing.T) {
	u, err := providerURL(model.Instance{Ip: "10.0.0.1", Port: 20880, Metadata: map[string]string{
		"interface": "org.Greeter", "protocol": "tri", "methods": "sayHello,bye",
		"sayHello.loadbalance": "shortestresponse", "loadbalance": "consistenthash",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := u.GetMethodParam("sayHello", "loadbalance", ""); got != "shortestresponse" {
		t.Errorf("sayHello's balancer = %q, want shortestresponse", got)
	}
	if got := u.GetMethodParam("bye", "loadbalance", ""); got != "" {
		t.Errorf("bye's balancer = %q, want none", got)
	}
}
