package nacosdiscovery

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/model"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// keptWarnings captures the module's log lines until t ends and returns a
// function that counts those saying a list was kept.
func keptWarnings(t *testing.T) func() int {
	var mu sync.Mutex
	var lines []string
	restore := lblog.Capture(func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
	})
	t.Cleanup(restore)
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "none is enabled and healthy; keeping the last") {
				n++
			}
		}
		return n
	}
}

// unusableLists are lists with no usable instance: every one unhealthy,
// every one disabled, a mix.
var unusableLists = [][]model.Instance{
	{instance(1, true, false), instance(2, true, false)},
	{instance(1, false, true), instance(2, false, true)},
	{instance(1, false, true), instance(2, true, false), instance(3, false, false)},
}

// With nacos.updateCacheWhenEmpty false, an interface-level consumer keeps
// its providers through pushes and server reads that list no usable
// instance, with one WARN for the whole run of them, and follows the next
// usable list.
func TestNoUsableInstanceKeepsTheInterfaceLevelList(t *testing.T) {
	kept := keptWarnings(t)
	c := &fakeClient{list: []model.Instance{instance(1, true, true), instance(2, true, true)}}
	rec := newRecorder()
	o := Options{Confirm: 10 * time.Millisecond, Resync: 20 * time.Millisecond}
	sub := subscribeToTwo(t, fakeSubscriptionKeeping(c, rec, o, true), rec)

	for _, list := range unusableLists {
		c.push(list...) // the server's list too: the resync reads it
		if got, _ := sub.feed.current(); !slices.Equal(hosts(got), []string{"127.0.0.1:1", "127.0.0.1:2"}) {
			t.Fatalf("after a push of %v the feed has %v, want the last usable 1 and 2", hosts(list), hosts(got))
		}
	}
	// The resync reads the server's unusable list again and again (every
	// 20 ms): still one WARN, and the list stays.
	sub.feed.mu.Lock()
	pushes := sub.feed.pushes
	sub.feed.mu.Unlock()
	if sub.feed.reconcile(unusableLists[0], pushes) {
		t.Error("a server read with no usable instance awaits confirmation, want it ignored")
	}
	if got, _ := sub.feed.current(); len(got) != 2 || !hasUsable(got) {
		t.Fatalf("after a server read with no usable instance the feed has %v", got)
	}
	if n := kept(); n != 1 {
		t.Errorf("%d WARN lines for one run of unusable lists, want 1", n)
	}
	if slices.ContainsFunc(rec.log(), func(e string) bool { return strings.HasPrefix(e, "delete") }) {
		t.Fatalf("the listener was told of a removal: %v", rec.log())
	}

	// A usable list is followed, and a later run of unusable ones warns
	// again, once.
	c.push(instance(3, true, true))
	if !rec.waitProviders(30*time.Second, "127.0.0.1:3") {
		t.Fatalf("after a usable list: %v (events %v)", rec.providers(), rec.log())
	}
	c.push(unusableLists[1]...)
	c.push(unusableLists[0]...)
	if got, _ := sub.feed.current(); !slices.Equal(hosts(got), []string{"127.0.0.1:3"}) {
		t.Fatalf("the feed has %v, want the last usable 3", hosts(got))
	}
	if n := kept(); n != 2 {
		t.Errorf("%d WARN lines for two runs of unusable lists, want 2", n)
	}
}

// With nacos.updateCacheWhenEmpty true (dubbo-go's default), an unusable
// list is followed: the consumer has no provider.
func TestNoUsableInstanceIsFollowedWhenTheCacheFollowsEmpty(t *testing.T) {
	kept := keptWarnings(t)
	c := &fakeClient{list: []model.Instance{instance(1, true, true), instance(2, true, true)}}
	rec := newRecorder()
	subscribeToTwo(t, fakeSubscription(c, rec), rec) // keepOnEmpty false
	c.push(unusableLists[0]...)
	if !rec.waitProviders(30 * time.Second) {
		t.Fatalf("after every instance turned unhealthy: %v, want none (events %v)", rec.providers(), rec.log())
	}
	if n := kept(); n != 0 {
		t.Errorf("%d WARN lines about a kept list, want none", n)
	}
}

// The same at application level: GetInstances and the listener keep the
// last usable instances through lists with none.
func TestNoUsableInstanceKeepsTheApplicationLevelList(t *testing.T) {
	kept := keptWarnings(t)
	c := &fakeClient{list: []model.Instance{appInst(1, 1, true, true), appInst(2, 1, true, true)}}
	d := fakeDiscovery(c)
	d.src.keepOnEmpty = true
	defer d.Destroy()
	l := newAppListener()
	if err := d.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if got := l.next(); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Fatalf("first event %v, want both", got)
	}
	for _, list := range [][]model.Instance{
		{appInst(1, 1, true, false), appInst(2, 1, true, false)},
		{appInst(1, 1, false, true), appInst(2, 1, false, true)},
		{appInst(1, 1, false, false)},
	} {
		c.push(list...)
		if got := addrsOf(d.GetInstances(app)); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
			t.Fatalf("GetInstances after a list with no usable instance: %v, want 1 and 2", got)
		}
	}
	c.push(appInst(1, 1, true, true), appInst(3, 1, true, true))
	if got := l.next(); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:3"}) {
		t.Fatalf("the event after the unusable lists: %v, want 1 and 3 (no empty event before)", got)
	}
	if n := kept(); n != 1 {
		t.Errorf("%d WARN lines for one run of unusable lists, want 1", n)
	}
}

// Against a real Nacos, with the registry's nacos.updateCacheWhenEmpty
// false: the service's one instance, persistent (registered through the
// Open API) and checked by Nacos's TCP health check, turns unhealthy when
// its port closes; the push that says so reaches the consumer's feed, and
// the feed keeps the provider, as its resync does with the server's
// answer. (A disabled instance is left out of pushes and of the Open API's
// list by Nacos 3.1.0: every instance disabled is an empty list there.)
func everyInstanceUnhealthyKeepsTheList(t tb) {
	s := plainNacos(t)
	group := groupOf(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().(*net.TCPAddr)
	a := addr.String()
	md, _ := json.Marshal(map[string]string{"interface": iface, "path": iface, "protocol": "tri"})
	q := url.Values{"serviceName": {service}, "groupName": {group}, "ip": {"127.0.0.1"}, "port": {strconv.Itoa(addr.Port)},
		"ephemeral": {"false"}, "weight": {"1"}, "enabled": {"true"}, "metadata": {string(md)}}
	openAPICall := func(method string) {
		req, err := http.NewRequest(method, "http://"+s.addr()+"/nacos/v1/ns/instance?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("%s instance: %v", method, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s instance: %d %s", method, resp.StatusCode, body)
		}
	}
	openAPICall(http.MethodPost)
	t.Cleanup(func() { openAPICall(http.MethodDelete) })
	w := Wrap(s.registry(t, group, "unhealthy-"+group), Options{Confirm: 200 * time.Millisecond, Resync: time.Second}).(*subscriber)
	rec, f := follow(t, w, a)

	l.Close() // Nacos's health check now fails
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := f.src.api.instances(service, group)
		f.mu.Lock()
		pushed := f.pushes
		f.mu.Unlock()
		if err == nil && len(list) == 1 && !list[0].Healthy && pushed > 1 {
			// The push of the unhealthy instance may come just after the
			// server's answer: wait for it, then for the resync's
			// confirmation.
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 minutes after its port closed the server lists %+v (%v), with %d pushes", list, err, pushed)
		}
		time.Sleep(100 * time.Millisecond) // polling the server
	}
	list, err := f.src.api.instances(service, group)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f.mu.Lock()
		pushes := f.pushes
		f.mu.Unlock()
		f.reconcile(list, pushes)
	}
	if got, _ := f.current(); len(got) != 1 || !usable(got[0]) {
		t.Fatalf("with every instance unhealthy the feed has %+v, want %s healthy", got, a)
	}
	if got := rec.providers(); !slices.Equal(got, []string{a}) {
		t.Fatalf("with every instance unhealthy the consumer knows %v (events %v), want %s", got, rec.log(), a)
	}
	if slices.ContainsFunc(rec.log(), func(e string) bool { return strings.HasPrefix(e, "delete") }) {
		t.Fatalf("the consumer was told of a removal: %v", rec.log())
	}
}

// The scenario everyInstanceUnhealthyKeepsTheList, in a child process.
func TestEveryInstanceUnhealthyKeepsTheList(t *testing.T) { runChild(t, envNacos, "unhealthy") }
