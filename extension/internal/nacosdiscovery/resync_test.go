package nacosdiscovery

import (
	"slices"
	"testing"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/model"
)

// reconcile puts a differing server answer in place only when a second
// read confirms it with no push in between.
func TestReconcile(t *testing.T) {
	a, b := instance(1, true, true), instance(2, true, true)
	bDisabled, bReweighted := instance(2, false, true), instance(2, true, true, "weight", "7")
	type read struct {
		list       []model.Instance
		pushBefore bool // a push of the feed's current list lands before the read
		pending    bool
	}
	for _, tc := range []struct {
		name        string
		keepOnEmpty bool
		pushed      []model.Instance // nil: no push yet
		reads       []read
		want        []model.Instance // the feed's list at the end
	}{
		{"agrees", false, []model.Instance{a, b}, []read{{list: []model.Instance{b, a}}}, []model.Instance{a, b}},
		{"agrees on the usable ones", false, []model.Instance{a}, []read{{list: []model.Instance{a, bDisabled}}}, []model.Instance{a}},
		{"no push yet", false, nil, []read{{list: []model.Instance{a}}, {list: []model.Instance{a}}}, nil},
		{"one differing read waits", false, []model.Instance{a}, []read{{list: []model.Instance{a, b}, pending: true}}, []model.Instance{a}},
		{"confirmed", false, []model.Instance{a}, []read{{list: []model.Instance{a, b}, pending: true}, {list: []model.Instance{a, b}}}, []model.Instance{a, b}},
		{"confirmed removal", false, []model.Instance{a, b}, []read{{list: []model.Instance{a}, pending: true}, {list: []model.Instance{a}}}, []model.Instance{a}},
		{"confirmed metadata", false, []model.Instance{a, b}, []read{{list: []model.Instance{a, bReweighted}, pending: true}, {list: []model.Instance{a, bReweighted}}}, []model.Instance{a, bReweighted}},
		{"a push in between", false, []model.Instance{a}, []read{{list: []model.Instance{a, b}, pending: true}, {list: []model.Instance{a, b}, pushBefore: true, pending: true}}, []model.Instance{a}},
		{"two different answers", false, []model.Instance{a}, []read{{list: []model.Instance{a, b}, pending: true}, {list: []model.Instance{b}, pending: true}}, []model.Instance{a}},
		{"confirmed empty", false, []model.Instance{a, b}, []read{{list: nil, pending: true}, {list: nil}}, nil},
		{"empty kept", true, []model.Instance{a, b}, []read{{list: nil}, {list: nil}}, []model.Instance{a, b}},
		{"none usable kept", true, []model.Instance{a, b}, []read{{list: []model.Instance{bDisabled}}, {list: []model.Instance{bDisabled}}}, []model.Instance{a, b}},
		{"none usable followed", false, []model.Instance{a, b}, []read{{list: []model.Instance{bDisabled}, pending: true}, {list: []model.Instance{bDisabled}}}, []model.Instance{bDisabled}},
		{"a usable list after none usable", true, []model.Instance{bDisabled}, []read{{list: []model.Instance{a, bDisabled}, pending: true}, {list: []model.Instance{a, bDisabled}}}, []model.Instance{a, bDisabled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &feed{service: service, group: "G", keepOnEmpty: tc.keepOnEmpty, subs: map[*subscription]struct{}{}}
			if tc.pushed != nil {
				f.onPush(tc.pushed, nil)
			}
			for i, r := range tc.reads {
				if r.pushBefore {
					f.onPush(f.pushed, nil)
				}
				f.mu.Lock()
				pushes := f.pushes
				f.mu.Unlock()
				if got := f.reconcile(r.list, pushes); got != r.pending {
					t.Errorf("read %d: pending %v, want %v", i, got, r.pending)
				}
			}
			if !slices.EqualFunc(f.pushed, tc.want, func(x, y model.Instance) bool {
				return hostOf(x) == hostOf(y) && x.Metadata["weight"] == y.Metadata["weight"]
			}) {
				t.Errorf("the feed has %v, want %v", f.pushed, tc.want)
			}
		})
	}
}

// The Nacos client calls back with an older list after a newer one (two of
// its goroutines store into its cache at once); its cache keeps the newer
// list, so nothing calls back again. The resync finds the difference on
// the server and tells the listener.
func TestResyncRepairsAStaleCallback(t *testing.T) {
	c := &fakeClient{list: []model.Instance{instance(1, true, true), instance(2, true, true)}}
	rec := newRecorder()
	sub := subscribedToTwo(t, c, rec, Options{Confirm: 10 * time.Millisecond, Resync: 50 * time.Millisecond})
	// The stale callback: the client's older list, while the server (and
	// the client's cache) keep both.
	sub.feed.onPush([]model.Instance{instance(1, true, true)}, nil)
	if !rec.waitEvent(30*time.Second, "delete 127.0.0.1:2") {
		t.Fatalf("the stale callback did not reach the listener: %v (events %v)", rec.providers(), rec.log())
	}
	if !rec.waitProviders(30*time.Second, "127.0.0.1:1", "127.0.0.1:2") {
		t.Fatalf("after the stale callback: %v, want 2 added again (events %v)", rec.providers(), rec.log())
	}
}

// A resync read that fails (a busy server timing out) is tried again soon,
// not a whole Resync later: the stale callback is repaired though the two
// reads after it fail. Resync is an hour here, so that waiting it out, as
// a failed read did before, fails the test.
func TestResyncTriesAFailedReadAgainSoon(t *testing.T) {
	c := &fakeClient{list: []model.Instance{instance(1, true, true), instance(2, true, true)}}
	rec := newRecorder()
	sub := subscribedToTwo(t, c, rec, Options{Confirm: 10 * time.Millisecond, Resync: time.Hour})
	c.mu.Lock()
	c.failAPI = 2
	c.mu.Unlock()
	sub.feed.onPush([]model.Instance{instance(1, true, true)}, nil)
	if !rec.waitEvent(30*time.Second, "delete 127.0.0.1:2") {
		t.Fatalf("the stale callback did not reach the listener: %v (events %v)", rec.providers(), rec.log())
	}
	if !rec.waitProviders(30*time.Second, "127.0.0.1:1", "127.0.0.1:2") {
		t.Fatalf("after the stale callback and two failed reads: %v, want 2 added again (events %v)", rec.providers(), rec.log())
	}
	c.mu.Lock()
	left := c.failAPI
	c.mu.Unlock()
	if left != 0 {
		t.Errorf("%d of the 2 failing reads left: the repair did not go through them", left)
	}
}

// subscribedToTwo loads and subscribes a subscription of c, whose list
// holds providers 1 and 2, and waits until rec has both; it is closed
// when t ends.
func subscribedToTwo(t *testing.T, c *fakeClient, rec *recorder, o Options) *subscription {
	t.Helper()
	return subscribeToTwo(t, fakeSubscriptionWith(c, rec, o), rec)
}

// subscribeToTwo loads and subscribes sub, whose client's list holds
// providers 1 and 2, and waits until rec has both; sub is closed when t
// ends.
func subscribeToTwo(t *testing.T, sub *subscription, rec *recorder) *subscription {
	t.Helper()
	if err := sub.load(); err != nil {
		t.Fatal(err)
	}
	sub.subscribe()
	t.Cleanup(func() { sub.close() })
	if !rec.waitProviders(30*time.Second, "127.0.0.1:1", "127.0.0.1:2") {
		t.Fatalf("after subscribing: %v (events %v)", rec.providers(), rec.log())
	}
	return sub
}
