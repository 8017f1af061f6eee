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

// growingSource describes three providers whose picks grow at 5, 3 and 2
// per snapshot, and counts the snapshots.
type growingSource struct{ n atomic.Int64 }

func (g *growingSource) Describe(int64) []describe.Method {
	k := g.n.Add(1)
	m := describe.Method{Service: "org.example.Greeter", Interface: "org.example.Greeter", Method: "Hello"}
	for i, rate := range []int64{5, 3, 2} {
		m.Providers = append(m.Providers, describe.Provider{
			Address: "127.0.0.1:2000" + strconv.Itoa(i), State: describe.StateOK,
			Weight: float64(100 * rate), Picks: rate * k * 100, LatencyMs: float64(i + 1),
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

// The page in a real headless browser: it loads, draws one series per
// provider in each chart, and updates every second (in the browser's
// virtual time, which waits for each fetch: no wall-clock timing).
func TestPageInBrowser(t *testing.T) {
	browser := chromium(t)
	src := &growingSource{}
	reg := describe.New(describe.Options{})
	reg.Register("lalb", src)
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()

	// Generous: a busy machine starts a browser slowly (12 s seen).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=4500", "--dump-dom", srv.URL+"/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", stderr.String())
	page := string(dom)

	updates := regexp.MustCompile(`<body data-updates="(\d+)"`).FindStringSubmatch(page)
	require.NotNil(t, updates, "no body in:\n%s", page)
	n, _ := strconv.Atoi(updates[1])
	assert.GreaterOrEqual(t, n, 3, "updates in 4.5 s of page time")
	assert.GreaterOrEqual(t, src.n.Load(), int64(n), "each update is a snapshot")

	for _, chart := range []string{"share", "weight"} {
		series := regexp.MustCompile(`<path class="series `+chart+`" data-provider="([^"]+)"[^>]* d="([^"]*)"`).FindAllStringSubmatch(page, -1)
		require.Len(t, series, 3, "one %s series per provider", chart)
		for i, s := range series {
			assert.Equal(t, "127.0.0.1:2000"+strconv.Itoa(i), s[1])
			assert.GreaterOrEqual(t, len(regexp.MustCompile(`[ML]`).FindAllString(s[2], -1)), 3, "a point per update: %s", s[2])
		}
	}
	assert.Contains(t, page, `"provider": "127.0.0.1:20000"`, "the JSON beside the charts")
}
