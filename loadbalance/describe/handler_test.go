package describe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// The page and its JSON, at the root and under a prefix.
func TestHandler(t *testing.T) {
	reg := describe.New(describe.Options{})
	reg.Register("x", &fakeSource{picks: map[string]int64{"a": 3, "b": 1}, methods: []string{"m"}})
	mux := http.NewServeMux()
	mux.Handle("/", reg.Handler())
	mux.Handle("/lb/", http.StripPrefix("/lb", reg.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, prefix := range []string{"", "/lb"} {
		code, ctype, body := get(t, srv.URL+prefix+"/")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "text/html; charset=utf-8", ctype)
		assert.Contains(t, body, `fetch("lb.json"`, "the page reads the JSON beside it")
		assert.NotRegexp(t, `(src|href)="https?:`, body, "nothing from elsewhere")

		code, ctype, body = get(t, srv.URL+prefix+"/lb.json")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "application/json", ctype)
		var snap describe.Snapshot
		require.NoError(t, json.Unmarshal([]byte(body), &snap))
		require.Len(t, snap.Balancers, 1)
		ps := snap.Balancers[0].Methods[0].Providers
		require.Len(t, ps, 2)
		assert.EqualValues(t, 3, ps[0].Picks)
		assert.Contains(t, body, `"provider": "a"`)
		assert.Contains(t, body, `"in_flight": 0`)

		code, _, _ = get(t, srv.URL+prefix+"/other")
		assert.Equal(t, http.StatusNotFound, code)
	}
}

// growingSource describes n providers (default 3) whose picks grow at 5,
// 3, 2, 5, 3, 2… per snapshot, and counts the snapshots. Their weights
// are large raw numbers, as LALB's are.
type growingSource struct {
	n     atomic.Int64
	count int
}

func (g *growingSource) Describe(int64) []describe.Method {
	k := g.n.Add(1)
	m := describe.Method{Service: "org.example.Greeter", Interface: "org.example.Greeter", Method: "Hello",
		Zones: &describe.Zones{Local: "az-a", Mode: "spill", LocalShare: 0.5}}
	for i := range max(g.count, 3) {
		rate := []int64{5, 3, 2}[i%3]
		m.Providers = append(m.Providers, describe.Provider{
			Address: "127.0.0.1:" + strconv.Itoa(20000+i), State: describe.StateOK, Zone: []string{"az-a", "az-b"}[i%2],
			Weight: float64(rate) * 89020346, Picks: rate * k * 100, LatencyMs: float64(i%3 + 1),
		})
	}
	return []describe.Method{m}
}

func (g *growingSource) Rebuilds() describe.Rebuilds { return describe.Rebuilds{Membership: 1} }

// chromium returns the headless browser to test the page with. Outside CI
// the test is skipped when there is none; CI installs Debian's chromium
// (.ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	names := []string{os.Getenv("DUBBOGO_LB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chromium-headless-shell"}
	for _, name := range names {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH but CI=true: .ci/run installs Debian's chromium")
	}
	t.Skip("no chromium on PATH (apt-get install chromium, or set DUBBOGO_LB_CHROMIUM)")
	return ""
}

// browse loads the page at url in headless Chromium with a window of
// width × height for 4.5 s of the browser's virtual time, which advances
// only while no fetch is pending (no wall-clock timing), and returns the
// DOM then.
func browse(t *testing.T, url string, width, height int) string {
	t.Helper()
	browser := chromium(t)
	// Generous: a busy machine starts a browser slowly (12 s seen).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height),
		"--virtual-time-budget=4500", "--dump-dom", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", stderr.String())
	return string(dom)
}

// attr returns the value of the body's attribute name in page.
func attr(t *testing.T, page, name string) int {
	t.Helper()
	m := regexp.MustCompile(`<body[^>]* ` + name + `="(\d+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, "no body %s in:\n%.2000s", name, page)
	n, _ := strconv.Atoi(m[1])
	return n
}

// The page in a real headless browser: it loads, draws one series per
// provider in each chart, and updates every second; the raw JSON shows
// when asked for (#raw=1, the toggle's state; TestPageInBrowserWith100Providers
// checks that it does not otherwise).
func TestPageInBrowser(t *testing.T) {
	chromium(t)
	src := &growingSource{}
	reg := describe.New(describe.Options{})
	reg.Register("lalb", src)
	reg.SetSubsets(func() []describe.Subset {
		return []describe.Subset{{Service: "org.example.Greeter", Registry: "interface", Mode: describe.SubsetAperture,
			Index: 1, Count: 4, Size: 2, Held: 3, Serving: 2, Total: 8, Members: []string{"127.0.0.1:20000", "127.0.0.1:20001", "127.0.0.1:20002"}}}
	})
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()

	page := browse(t, srv.URL+"/#raw=1", 1280, 800)
	assert.Contains(t, page, `Subset (interface level, aperture, consumer 2 of 4): 3 of 8 providers held, 2 serving, size 2`, "the card says which subset the consumer holds")
	n := attr(t, page, "data-updates")
	assert.GreaterOrEqual(t, n, 3, "updates in 4.5 s of page time")
	assert.GreaterOrEqual(t, src.n.Load(), int64(n), "each update is a snapshot")

	for _, chart := range []string{"share", "weight"} {
		series := regexp.MustCompile(`<path class="series `+chart+`" data-provider="([^"]+)"[^>]* d="([^"]*)"`).FindAllStringSubmatch(page, -1)
		require.Len(t, series, 3, "one %s series per provider", chart)
		for _, s := range series {
			assert.GreaterOrEqual(t, len(regexp.MustCompile(`[ML]`).FindAllString(s[2], -1)), 3, "a point per update: %s", s[2])
		}
	}
	assert.Contains(t, page, `"provider": "127.0.0.1:20000"`, "the JSON, asked for")
	assert.Contains(t, page, `<span class="balancer" title="balancer">lalb</span>`, "the card names the balancer")
	// Weights 5:3:2 of 89020346: 50 % of the total, the raw value on hover.
	assert.Contains(t, page, `<td title="raw weight 445101730">50.0 %</td>`)

}

// servePage serves the live page of one balancer describing n providers
// until the test ends; it skips the test without a browser.
func servePage(t *testing.T, n int) *httptest.Server {
	chromium(t)
	reg := describe.New(describe.Options{})
	reg.Register("lalb", &growingSource{count: n})
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// rows matches a provider's row of the page.
var rows = regexp.MustCompile(`<tr data-provider="([^"]+)"`)

// 100 providers on a wide screen and on a phone: nothing wider than the
// window, every provider in the table, the charts kept to the 8 with the
// largest share; the table sorts and filters (from the address, as a
// click or a keystroke leaves them).
func TestPageInBrowserWith100Providers(t *testing.T) {
	srv := servePage(t, 100)
	for _, size := range [][2]int{{1280, 800}, {390, 844}} {
		page := browse(t, srv.URL+"/", size[0], size[1])
		assert.Equal(t, 0, attr(t, page, "data-overflow"), "%dx%d: wider than the window by this many pixels", size[0], size[1])
		assert.Len(t, rows.FindAllStringSubmatch(page, -1), 100, "%dx%d: a row per provider", size[0], size[1])
		assert.Len(t, regexp.MustCompile(`<path class="series share"`).FindAllString(page, -1), 8, "the 8 with the largest share")
		assert.Contains(t, page, "100 of 100 providers")
		assert.Contains(t, page, "zone az-a: spill, 50.0 % kept local", "the zone plan")
		assert.NotContains(t, page, `"provider": "127.0.0.1:20000"`, "no JSON unless asked for")
	}

	page := browse(t, srv.URL+"/#sort=share&desc=1&filter=127.0.0.1:2009", 390, 844)
	got := rows.FindAllStringSubmatch(page, -1)
	require.Len(t, got, 10, "ports 20090 to 20099")
	assert.Contains(t, page, "10 of 100 providers")
	// Shares 5:3:2 by port mod 3: the four of 5, in the order given, first.
	for i, want := range []string{"127.0.0.1:20090", "127.0.0.1:20093", "127.0.0.1:20096", "127.0.0.1:20099", "127.0.0.1:20091"} {
		assert.Equal(t, want, got[i][1], "row %d, sorted by share, largest first", i)
	}
	assert.Equal(t, 0, attr(t, page, "data-overflow"))

	// The zone column filters too: the odd ports are in az-b.
	page = browse(t, srv.URL+"/#filter=az-b", 1280, 800)
	assert.Len(t, rows.FindAllStringSubmatch(page, -1), 50, "the providers of zone az-b")
	assert.Contains(t, page, "50 of 100 providers")
}

// lb.json at 10,000 providers: every method lists at most DefaultRows,
// the notable ones, with a summary of all; ?method=…&offset=…&limit=…
// pages through them, at most MaxRows at a time; a malformed number is
// refused.
func TestHandlerBoundsProviders(t *testing.T) {
	reg := describe.New(describe.Options{})
	reg.Register("lalb", &growingSource{count: 10000})
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	snap := func(query string) describe.Method {
		t.Helper()
		code, _, body := get(t, srv.URL+"/lb.json"+query)
		require.Equal(t, http.StatusOK, code, body)
		var s describe.Snapshot
		require.NoError(t, json.Unmarshal([]byte(body), &s))
		require.Len(t, s.Balancers[0].Methods, 1)
		return s.Balancers[0].Methods[0]
	}

	m := snap("")
	assert.Len(t, m.Providers, describe.DefaultRows)
	require.NotNil(t, m.Summary)
	assert.Equal(t, 10000, m.Summary.Providers)
	assert.Equal(t, -1, m.Summary.Offset)
	assert.Equal(t, map[describe.State]int{describe.StateOK: 10000}, m.Summary.States)
	require.Len(t, m.Summary.Zones, 2)
	assert.Equal(t, "az-a", m.Summary.Zones[0].Zone)
	assert.Equal(t, 5000, m.Summary.Zones[0].Providers)
	assert.InDelta(t, 1, m.Summary.Zones[0].Share+m.Summary.Zones[1].Share, 1e-9)
	// Latencies 1, 2, 3 ms by port mod 3: the slowest and the fastest
	// are both listed.
	lat := map[float64]bool{}
	for _, p := range m.Providers {
		lat[p.LatencyMs] = true
	}
	assert.True(t, lat[1] && lat[3], "the fastest and the slowest: %v", lat)

	m = snap("?service=org.example.Greeter&method=Hello&offset=9990&limit=50")
	require.Len(t, m.Providers, 10)
	assert.Equal(t, "127.0.0.1:29990", m.Providers[0].Address)
	require.NotNil(t, m.Summary)
	assert.Equal(t, 9990, m.Summary.Offset)
	assert.Len(t, snap("?method=Hello&limit=5000").Providers, describe.MaxRows)

	code, _, body := get(t, srv.URL+"/lb.json?method=Other")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"methods": []`, "no such method")
	for _, q := range []string{"?offset=-1", "?limit=x"} {
		code, _, _ := get(t, srv.URL+"/lb.json"+q)
		assert.Equal(t, http.StatusBadRequest, code, q)
	}
	// With few providers, everything as before: no summary.
	small := describe.New(describe.Options{})
	small.Register("lalb", &growingSource{count: 100})
	s2 := httptest.NewServer(small.Handler())
	defer s2.Close()
	_, _, body = get(t, s2.URL+"/lb.json")
	assert.NotContains(t, body, `"summary"`)
}

// 10,000 providers on a wide screen and on a phone: the page lists at
// most DefaultRows of them, says of how many, sums them per zone and
// links to every page of the JSON; nothing wider than the window.
func TestPageInBrowserWith10000Providers(t *testing.T) {
	srv := servePage(t, 10000)
	for _, size := range [][2]int{{1280, 800}, {390, 844}} {
		page := browse(t, srv.URL+"/", size[0], size[1])
		assert.GreaterOrEqual(t, attr(t, page, "data-updates"), 1, "%dx%d: rendered", size[0], size[1])
		assert.Equal(t, 0, attr(t, page, "data-overflow"), "%dx%d: wider than the window by this many pixels", size[0], size[1])
		assert.Len(t, rows.FindAllStringSubmatch(page, -1), describe.DefaultRows, "%dx%d: the notable providers only", size[0], size[1])
		assert.Contains(t, page, "200 of 200 providers listed of 10000")
		assert.Contains(t, page, "Summary of 10000 providers (10000 ok)")
		assert.Len(t, regexp.MustCompile(`<tr data-zone="az-[ab]"><td>az-[ab]</td><td>5000</td>`).FindAllString(page, -1), 2, "a row per zone")
		assert.Contains(t, page, `href="lb.json?service=org.example.Greeter&amp;method=Hello&amp;offset=9000&amp;limit=1000"`, "the last page of the JSON")
		assert.Len(t, regexp.MustCompile(`<path class="series share"`).FindAllString(page, -1), 8)
	}
}
