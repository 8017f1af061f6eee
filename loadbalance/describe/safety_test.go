package describe_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// serve sends a request with method and Host host for path to h and
// returns the response.
func serve(h http.Handler, method, host, path string) *http.Response {
	req := httptest.NewRequest(method, "http://placeholder"+path, nil)
	req.Host = host
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// The handler answers GET and HEAD for loopback and allow-listed Hosts,
// 405 to other methods and 403 to other Hosts, and every response
// forbids sniffing and framing.
func TestHandlerMethodsHostsAndHeaders(t *testing.T) {
	reg := describe.New(describe.Options{})
	reg.Register("x", &fakeSource{picks: map[string]int64{"a": 1}, methods: []string{"m"}})
	h := reg.HandlerWith(describe.HandlerOptions{AllowedHosts: []string{"Page.Example:9", "10.0.0.5", "[fd00::5]"}})
	plain := reg.Handler()
	check := func(res *http.Response, want int, what string) {
		t.Helper()
		assert.Equal(t, want, res.StatusCode, what)
		assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), what)
		assert.Equal(t, "frame-ancestors 'none'", res.Header.Get("Content-Security-Policy"), what)
	}
	loopbacks := []string{"localhost", "localhost:8080", "LOCALHOST.", "127.0.0.1", "127.0.0.1:1", "127.1.2.3:80", "[::1]", "[::1]:8080", "::1", "[::ffff:127.0.0.1]:80"}
	for _, host := range append(loopbacks, "page.example", "page.example:8080", "10.0.0.5:1", "[fd00::5]:80") {
		for _, path := range []string{"/", "/lb.json"} {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				check(serve(h, method, host, path), http.StatusOK, method+" "+host+path)
			}
			for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodPatch, "TRACE"} {
				res := serve(h, method, host, path)
				check(res, http.StatusMethodNotAllowed, method+" "+host+path)
				assert.Equal(t, "GET, HEAD", res.Header.Get("Allow"), method)
			}
		}
	}
	for _, host := range loopbacks {
		check(serve(plain, http.MethodGet, host, "/lb.json"), http.StatusOK, "default, "+host)
	}
	for _, host := range []string{"", "evil.example", "evil.example:80", "127.0.0.1.evil.example", "localhost.evil.example",
		"10.0.0.6", "[fe80::1%25eth0]", "0.0.0.0", "[::]:80", "page.example.evil"} {
		for _, path := range []string{"/", "/lb.json", "/other"} {
			check(serve(h, http.MethodGet, host, path), http.StatusForbidden, "foreign "+host+path)
		}
	}
	for _, host := range []string{"page.example", "10.0.0.5"} {
		check(serve(plain, http.MethodGet, host, "/"), http.StatusForbidden, "default, not allowed: "+host)
	}
	check(serve(h, http.MethodGet, "localhost", "/other"), http.StatusNotFound, "not found")
}

// hostileSource describes one provider whose every float is NaN, ±Inf or
// huge, as no balancer of the module reports but a Source may.
type hostileSource struct{}

func (hostileSource) Describe(int64) []describe.Method {
	nan, inf := math.NaN(), math.Inf(1)
	return []describe.Method{{Service: "svc", Method: "m", ShareSeconds: nan,
		Zones: &describe.Zones{Local: "a", Mode: "spill", LocalShare: nan},
		Providers: []describe.Provider{{Address: "a", Weight: nan, CostMs: inf, LatencyMs: 1e308, Picks: 1,
			Reported: &describe.Reported{AgeSeconds: -inf, Utilization: &nan, JavaLoad: &inf, QPS: inf, EPS: nan, Capacity: 1e308}}}}}
}

func (hostileSource) Rebuilds() describe.Rebuilds { return describe.Rebuilds{} }

// A hostile load report, stored as is on a real balancer's provider
// (NaN, +Inf, 1e308: what the parser would clamp), and a Source whose
// figures are not finite: the page and lb.json answer 200 with valid JSON,
// NaN reading 0 and ±Inf ±math.MaxFloat64.
func TestPageSurvivesHostileLoadReport(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := []base.Invoker{lbtest.Provider(20700, map[string]string{"weight": "100"}), lbtest.Provider(20701, map[string]string{"weight": "100"})}
	lbtest.Counts(lb, list, lbtest.Call("Say"), 10)
	r := loadreport.Report{CPU: math.NaN(), Inflight: math.Inf(1), Capacity: 1e308, QPS: math.Inf(1), EPS: math.NaN(), JavaLoad: math.Inf(-1),
		Has: loadreport.Own | loadreport.HasJavaLoad}
	rpcstatus.Of(list[0].GetURL()).Load().Store(rpcstatus.Nanotime(), &r)
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	reg.Register("hostile", hostileSource{})

	for _, path := range []string{"/", "/lb.json"} {
		res := serve(reg.Handler(), http.MethodGet, "127.0.0.1", path)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
	}
	res := serve(reg.Handler(), http.MethodGet, "127.0.0.1", "/lb.json")
	var snap describe.Snapshot
	require.NoError(t, json.NewDecoder(res.Body).Decode(&snap))
	require.Len(t, snap.Balancers, 2)
	rep := snap.Balancers[0].Methods[0].Providers[0].Reported
	require.NotNil(t, rep)
	assert.Equal(t, 0.0, rep.CPU)
	assert.Equal(t, math.MaxFloat64, rep.QPS)
	assert.Equal(t, 1e308, rep.Capacity, "a huge finite value stays")
	require.NotNil(t, rep.JavaLoad)
	assert.Equal(t, -math.MaxFloat64, *rep.JavaLoad)

	m := snap.Balancers[1].Methods[0]
	p := m.Providers[0]
	assert.Equal(t, 0.0, m.Zones.LocalShare)
	assert.Equal(t, 0.0, p.Weight)
	assert.Equal(t, math.MaxFloat64, p.CostMs)
	assert.Equal(t, 1e308, p.LatencyMs)
	assert.Equal(t, -math.MaxFloat64, p.Reported.AgeSeconds)
	assert.Equal(t, 0.0, *p.Reported.Utilization)
	assert.Equal(t, math.MaxFloat64, *p.Reported.JavaLoad)
	_, err := json.Marshal(reg.Snapshot())
	assert.NoError(t, err)
}

// blockingSource blocks its first Describe until release is closed, having
// closed entered.
type blockingSource struct {
	calls            atomic.Int64
	entered, release chan struct{}
}

func (b *blockingSource) Describe(int64) []describe.Method {
	if b.calls.Add(1) == 1 {
		close(b.entered)
		<-b.release
	}
	return nil
}

func (*blockingSource) Rebuilds() describe.Rebuilds { return describe.Rebuilds{} }

// A Source that blocks in Describe holds up its own Snapshot only: Register
// and another Snapshot, which describes every Source, go through. With the
// Registry's lock held while describing, they would wait for the release
// and the test would fail at its (generous) deadline.
func TestSnapshotDoesNotHoldTheLockWhileDescribing(t *testing.T) {
	reg := describe.New(describe.Options{})
	slow := &blockingSource{entered: make(chan struct{}), release: make(chan struct{})}
	reg.Register("slow", slow)
	reg.Register("x", &fakeSource{picks: map[string]int64{"a": 1}, methods: []string{"m"}})
	first := make(chan describe.Snapshot)
	go func() { first <- reg.Snapshot() }()
	<-slow.entered

	done := make(chan describe.Snapshot)
	go func() {
		reg.Register("y", &fakeSource{picks: map[string]int64{"b": 1}, methods: []string{"n"}})
		done <- reg.Snapshot()
	}()
	select {
	case snap := <-done:
		require.Len(t, snap.Balancers, 3)
		assert.Equal(t, "y", snap.Balancers[2].Name)
		assert.Len(t, snap.Balancers[1].Methods, 1)
	case <-time.After(time.Minute):
		close(slow.release)
		t.Fatal("Register and Snapshot waited for another Snapshot's Describe")
	}
	close(slow.release)
	assert.Len(t, (<-first).Balancers, 2, "the first Snapshot completes with the Sources it saw")
}

// panicSource panics in Describe.
type panicSource struct{}

func (panicSource) Describe(int64) []describe.Method { panic("boom") }
func (panicSource) Rebuilds() describe.Rebuilds      { return describe.Rebuilds{Membership: 1} }

// A Source that panics is listed without methods, logged once; the
// others are described.
func TestSnapshotSurvivesAPanickingSource(t *testing.T) {
	logs := lbtest.CaptureLogs(t)
	reg := describe.New(describe.Options{})
	reg.Register("bad", panicSource{})
	reg.Register("x", &fakeSource{picks: map[string]int64{"a": 1}, methods: []string{"m"}})
	for range 3 {
		snap := reg.Snapshot()
		require.Len(t, snap.Balancers, 2)
		assert.Empty(t, snap.Balancers[0].Methods)
		assert.NotNil(t, snap.Balancers[0].Methods, "[] in JSON")
		assert.Len(t, snap.Balancers[1].Methods, 1)
	}
	require.Len(t, logs(), 1)
	assert.True(t, strings.Contains(logs()[0], `"bad"`) && strings.Contains(logs()[0], "boom"), logs()[0])
}
