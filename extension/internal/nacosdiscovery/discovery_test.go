package nacosdiscovery

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"dubbo.apache.org/dubbo-go/v3/registry"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
)

// startupRace forces, step by step, the order of events in which
// dubbo-go v3.3.2 with nacos-sdk-go v2.3.2 (or v2.2.5, which dubbo-go pins)
// loses a provider: through sub
// (a registry), the consumer loads the instances while the service has
// only provider A; provider B registers; B's push reaches the Nacos
// client's cache; only then does the consumer subscribe. It returns the
// consumer's listener and A's and B's addresses.
func startupRace(t tb, reg, sub registry.Registry, group string) (*recorder, string, string) {
	t.Helper()
	const a, b = "127.0.0.1:20001", "127.0.0.1:20002"
	register(t, group, 20001)
	u, rec := consumerURL(t), newRecorder()

	// The query: A alone, and it becomes the listener's baseline.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := sub.LoadSubscribeInstances(u, rec); err != nil {
			t.Fatal(err)
		}
		if got := rec.providers(); slices.Equal(got, []string{a}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the query never returned provider A: %v", rec.log())
		}
		time.Sleep(100 * time.Millisecond) // polling Nacos until it lists A
	}

	// The push of [A, B] reaches the consumer's Nacos client before the
	// consumer subscribes: for dubbo-go's listener, a probe on the client
	// it shares sees it land in the cache; for this package, its own
	// client's feed has it.
	probe := pushed(t, pooledClient(t, reg), group)
	register(t, group, 20002)
	waitPushed(t, probe, a, b)
	if w, ok := sub.(*subscriber); ok {
		waitFeed(t, w, rec, a, b)
	}

	if err := sub.Subscribe(u, rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.UnSubscribe(u, rec) })
	return rec, a, b
}

// The fault, reproduced with dubbo-go's own Nacos listener: it keeps the
// baseline of its query and is never told of the push it missed, so the
// consumer goes without provider B until the service changes again. If a
// new dubbo-go or Nacos client fixes this, this test fails and says so.
func upstreamListenerMissesAProviderPushedBeforeSubscribe(t tb) {
	group := groupOf(t)
	reg := dubboRegistry(t, group, "upstream-"+group)
	rec, a, b := startupRace(t, reg, reg, group)

	// A subscriber of this package on the same client sees both at once:
	// the cache has B, so the upstream listener had every chance to.
	ours := newRecorder()
	w := Wrap(reg, Options{})
	u := consumerURL(t)
	if err := w.LoadSubscribeInstances(u, ours); err != nil {
		t.Fatal(err)
	}
	if err := w.Subscribe(u, ours); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.UnSubscribe(u, ours) })
	if !ours.waitProviders(30*time.Second, a, b) {
		t.Fatalf("this package's subscriber on the same client: %v, want %s and %s", ours.log(), a, b)
	}

	got := rec.providers()
	if slices.Contains(got, b) {
		t.Fatalf("dubbo-go's listener found provider B (%v): the upstream start-up fault seems fixed; reconsider this package", rec.log())
	}
	t.Logf("dubbo-go's listener, subscribed before ours, still knows only %v (events %v)", got, rec.log())

	// The next change of the service brings B along: it had been missing.
	register(t, group, 20003)
	if !rec.waitProviders(30*time.Second, a, b, "127.0.0.1:20003") {
		t.Fatalf("dubbo-go's listener after a new provider: %v", rec.log())
	}
}

// The same order of events through this package: the consumer has B right
// after it subscribes.
func providerPushedBeforeSubscribeIsFound(t tb) {
	group := groupOf(t)
	reg := dubboRegistry(t, group, "fixed-"+group)
	subscribed := time.Now()
	rec, a, b := startupRace(t, reg, Wrap(reg, Options{}), group)
	if !rec.waitProviders(5*time.Second, a, b) {
		t.Fatalf("after subscribing the consumer knows %v (events %v), want %s and %s", rec.providers(), rec.log(), a, b)
	}
	t.Logf("both providers known %v after the race began", time.Since(subscribed).Round(time.Millisecond))
}

// Consumers that subscribe at staggered moments 0-1 s after a provider
// registers, each with Nacos clients of its own, all find every provider
// within 5 s of subscribing. Their registries (dubbo-go's, with its Nacos
// client) are made beforehand, as a consumer process does at start; what
// races the registration is the subscription.
func everyConsumerFindsEveryProviderWhateverItsStart(t tb) {
	const consumers = 30
	const a, b = "127.0.0.1:20001", "127.0.0.1:20002"
	group := groupOf(t)
	register(t, group, 20001)
	waitPushed(t, pushed(t, sdkClient(t), group), a)

	regs := make([]registry.Registry, consumers)
	var made sync.WaitGroup
	for i := range regs {
		made.Go(func() { regs[i] = dubboRegistry(t, group, fmt.Sprintf("consumer-%d-%s", i, group)) })
	}
	made.Wait()

	registered := time.Now()
	register(t, group, 20002)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		slow   []string
		latest time.Duration
		detail string
	)
	for i, reg := range regs {
		wg.Add(1)
		offset := time.Duration(i) * time.Second / (consumers - 1)
		time.AfterFunc(time.Until(registered.Add(offset)), func() {
			defer wg.Done()
			start := time.Now()
			sub, u, rec := Wrap(reg, Options{}), consumerURL(t), newRecorder()
			err := sub.LoadSubscribeInstances(u, rec)
			if err == nil {
				err = sub.Subscribe(u, rec)
			}
			subscribed := time.Since(start)
			ok := err == nil && rec.waitProviders(5*time.Second-time.Since(start), a, b)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if !ok {
				slow = append(slow, fmt.Sprintf("consumer %d (subscribing %v after the registration, subscribed after %v): %v, error %v",
					i, offset, subscribed, rec.log(), err))
			}
			if took > latest {
				latest = took
				detail = fmt.Sprintf("consumer %d, subscribed after %v", i, subscribed.Round(time.Millisecond))
			}
			_ = sub.UnSubscribe(u, rec)
		})
	}
	wg.Wait()
	for _, s := range slow {
		t.Errorf("not every provider within 5 s: %s", s)
	}
	t.Logf("%d consumers subscribed 0-1 s after a provider registered; the slowest knew every provider %v after it began (%s)",
		consumers, latest.Round(time.Millisecond), detail)
}

// A stale callback of the Nacos client (an older list after a newer one,
// which its cache does not hold) leaves the consumer without a provider
// until the resync reads the real server and repairs it, within seconds.
func staleCallbackIsRepairedFromTheServer(t tb) {
	const a, b = "127.0.0.1:20001", "127.0.0.1:20002"
	group := groupOf(t)
	register(t, group, 20001)
	register(t, group, 20002)
	reg := dubboRegistry(t, group, "stale-"+group)
	w := Wrap(reg, Options{Confirm: 200 * time.Millisecond, Resync: time.Second}).(*subscriber)
	rec, f := follow(t, w, a, b)
	list, err := f.current()
	if err != nil {
		t.Fatal(err)
	}
	var older []model.Instance
	for _, in := range list {
		if hostOf(in) == a {
			older = append(older, in)
		}
	}
	stale := time.Now()
	f.onPush(older, nil)
	if !rec.waitEvent(30*time.Second, "delete "+b) {
		t.Fatalf("the stale callback did not reach the listener (events %v)", rec.log())
	}
	if !rec.waitProviders(5*time.Second, a, b) {
		t.Fatalf("5 s after a stale callback the consumer knows %v (events %v), want %s and %s again", rec.providers(), rec.log(), a, b)
	}
	t.Logf("repaired %v after the stale callback", time.Since(stale).Round(time.Millisecond))
}
