package it

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// envScreenshot names a PNG file that TestMetricsAndLivePageMatchTheConsumersCounts
// fills with a screenshot of the consumer's live page in headless
// Chromium, taken while it runs (the README's picture).
const envScreenshot = "DUBBOGO_LB_SCREENSHOT"

// The balancers' metrics on the real consumer's Prometheus endpoint, the
// one dubbo-go's metrics configuration opens, beside dubbo-go's own: the
// picks of each provider during a run match the calls the consumer itself
// counted, within 1 % (plus the attempts that failed, which the consumer
// cannot attribute to a provider). The consumer waits (-pause) before and
// after its run, so that both scrapes see no call in flight. Its live page
// and JSON show the same counters.
func TestMetricsAndLivePageMatchTheConsumersCounts(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setup(t)
	ps := e.startRegistered(t, providerSpec{name: "m2ms", latency: "2ms"},
		providerSpec{name: "m5ms", latency: "5ms"}, providerSpec{name: "m10ms", latency: "10ms"})
	metricsPort := strconv.Itoa(freePort(t))
	page := "127.0.0.1:" + strconv.Itoa(freePort(t))
	c := e.startPausedConsumer(t, "lalb", len(ps), "-metrics", metricsPort, "-debug", page, "-duration", "20s")

	before := scrape(t, metricsPort)
	if err := c.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	shot := make(chan error, 1)
	if path := os.Getenv(envScreenshot); path != "" {
		go func() { shot <- screenshot("http://"+page+"/", path, 18) }()
	} else {
		shot <- nil
	}
	var total report
	select {
	case total = <-c.total:
	case <-time.After(10 * time.Minute): // a 20 s run, on a machine however busy
		t.Fatalf("%s: no totals within 10 min; log:\n%s", c.name, tail(c.log.String(), 30))
	}
	c.waitLog(t, pausedAfter)
	after := scrape(t, metricsPort)
	if err := <-shot; err != nil {
		t.Errorf("screenshot: %v", err)
	}

	picks := func(mfs map[string]*dto.MetricFamily, name, addr string) float64 {
		return value(mfs[name], map[string]string{"provider": addr, "loadbalance": "lalb", "method": "Hello"})
	}
	for _, p := range ps {
		addr := "127.0.0.1:" + strconv.Itoa(p.spec.port)
		got := picks(after, "dubbo_consumer_lb_picks_total", addr) - picks(before, "dubbo_consumer_lb_picks_total", addr)
		failed := picks(after, "dubbo_consumer_lb_requests_failed_total", addr) - picks(before, "dubbo_consumer_lb_requests_failed_total", addr)
		own := float64(total.By[p.spec.name])
		if tol := own/100 + failed; math.IsNaN(got) || math.Abs(got-own) > tol {
			t.Errorf("provider %s (%s): %v picks on the endpoint, the consumer counted %v calls (tolerance %.1f: 1 %% + %v failed attempts)",
				p.spec.name, addr, got, own, tol, failed)
		} else {
			t.Logf("provider %s: %v picks, %v calls counted by the consumer", p.spec.name, got, own)
		}
		if v := picks(after, "dubbo_consumer_lb_requests_in_flight", addr); v != 0 {
			t.Errorf("provider %s: %v calls in flight after the run", p.spec.name, v)
		}
		if v := picks(after, "dubbo_consumer_lb_weight", addr); !(v > 0) {
			t.Errorf("provider %s: LALB weight %v", p.spec.name, v)
		}
	}
	checkLabels(t, after)
	checkJSON(t, page, after, ps)
}

// checkLabels checks that the balancers' metrics carry dubbo-go's labels,
// with the values of dubbo-go's own metrics of the same calls on the same
// endpoint. dubbo-go v3.3.2 files a consumer's calls to a provider found
// through interface-level Nacos under dubbo_provider_*: the provider URL it
// merges keeps the provider's registry.role.
func checkLabels(t *testing.T, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	theirs := mfs["dubbo_consumer_requests_total"]
	if theirs == nil {
		theirs = mfs["dubbo_provider_requests_total"]
	}
	ours := mfs["dubbo_consumer_lb_picks_total"]
	if theirs == nil || ours == nil {
		t.Fatalf("dubbo-go's requests_total (%v) and our picks_total (%v) must both be on the endpoint", theirs != nil, ours != nil)
	}
	want := labels(theirs.GetMetric()[0])
	t.Logf("dubbo-go's %s labels: %v", theirs.GetName(), want)
	for _, m := range ours.GetMetric() {
		got := labels(m)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("label %s: %q on %s, %q on dubbo-go's metric", k, got[k], ours.GetName(), v)
			}
		}
		if got["provider"] == "" || got["loadbalance"] != "lalb" {
			t.Errorf("provider %q, loadbalance %q", got["provider"], got["loadbalance"])
		}
	}
	if v := value(mfs["dubbo_consumer_lb_snapshot_rebuilds_total"], map[string]string{"loadbalance": "lalb", "reason": "membership"}); !(v >= 1) {
		t.Errorf("lalb rebuilds for membership: %v", v)
	}
}

// checkJSON reads the live page and its JSON: the same picks as the
// endpoint, one provider each.
func checkJSON(t *testing.T, page string, mfs map[string]*dto.MetricFamily, ps []*provider) {
	t.Helper()
	body := get(t, "http://"+page+"/")
	if !strings.Contains(body, `fetch("lb.json"`) {
		t.Errorf("the live page is not served at %s", page)
	}
	var snap describe.Snapshot
	if err := json.Unmarshal([]byte(get(t, "http://"+page+"/lb.json")), &snap); err != nil {
		t.Fatal(err)
	}
	for _, b := range snap.Balancers {
		if b.Name != "lalb" {
			continue
		}
		if len(b.Methods) != 1 || len(b.Methods[0].Providers) != len(ps) {
			t.Fatalf("lalb in lb.json: %+v, want one method with %d providers", b.Methods, len(ps))
		}
		for _, p := range b.Methods[0].Providers {
			want := value(mfs["dubbo_consumer_lb_picks_total"], map[string]string{"provider": p.Address, "loadbalance": "lalb"})
			if float64(p.Picks) != want {
				t.Errorf("lb.json: %s picked %d times, the endpoint says %v", p.Address, p.Picks, want)
			}
		}
		return
	}
	t.Errorf("no lalb in lb.json: %+v", snap)
}

// startRegistered starts a provider per spec and waits until exactly they
// are registered.
func (e *env) startRegistered(t *testing.T, specs ...providerSpec) []*provider {
	t.Helper()
	ps := make([]*provider, len(specs))
	for i, s := range specs {
		ps[i] = e.startProvider(t, s)
	}
	e.waitRegistered(t, ps...)
	return ps
}

// startPausedConsumer starts a consumer with -pause that waits for n
// providers, and returns it once it waits before its run. A consumer that
// does not find every provider within its -ready-timeout exits, and fails
// the test (as with startConsumers).
func (e *env) startPausedConsumer(t *testing.T, balancer string, n int, args ...string) *consumer {
	t.Helper()
	c := e.startConsumer(t, balancer, append([]string{"-providers", strconv.Itoa(n), "-pause"}, args...)...)
	if !c.waitLog(t, pausedBefore) {
		t.Fatalf("%s exited (%v) before its run; log:\n%s", c.name, c.err, tail(c.log.String(), 30))
	}
	return c
}

// What the sample consumer prints on stderr when -pause makes it wait
// (samples/consumer).
const (
	pausedBefore = "paused before the run"
	pausedAfter  = "paused after the run"
)

// waitLog waits until the consumer's output contains text (true) or it
// exits (false); it fails t after 3 minutes (-ready-timeout, then a run).
func (c *consumer) waitLog(t *testing.T, text string) bool {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(c.log.String(), text) {
		if c.exited() {
			return false
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q within 3 min; log:\n%s", c.name, text, tail(c.log.String(), 30))
		}
		time.Sleep(100 * time.Millisecond) // polling a child's output
	}
	return true
}

// get returns the body of url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// scrape reads the consumer's Prometheus endpoint on port, which dubbo-go
// opens in the background: it retries for up to a minute.
func scrape(t *testing.T, port string) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := httpClient.Get("http://127.0.0.1:" + port + "/metrics")
		if err == nil {
			var p expfmt.TextParser
			mfs, err := p.TextToMetricFamilies(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("the endpoint's text: %v", err)
			}
			return mfs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Prometheus endpoint on port %s: %v", port, err)
		}
		time.Sleep(100 * time.Millisecond) // polling a server that starts in the background
	}
}

// labels returns the labels of m.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// value returns the value of the one metric of mf whose labels include
// want, NaN if there is none or more than one.
func value(mf *dto.MetricFamily, want map[string]string) float64 {
	found := math.NaN()
	n := 0
	for _, m := range mf.GetMetric() {
		got := labels(m)
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			n++
			switch {
			case m.GetCounter() != nil:
				found = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				found = m.GetGauge().GetValue()
			}
		}
	}
	if n != 1 {
		return math.NaN()
	}
	return found
}

// screenshot saves a picture of the live page at pageURL to path, as
// headless Chromium renders it after seconds of updates. The browser runs
// on virtual time, which it advances only while no fetch is pending; a
// proxy that holds each JSON fetch for a second makes that real time, so
// the charts show seconds of real traffic.
func screenshot(pageURL, path string, seconds int) error {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		return err
	}
	target, err := url.Parse(pageURL)
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".json") {
			time.Sleep(time.Second) // see above: real time for the page
		}
		proxy.ServeHTTP(w, r)
	}))
	defer slow.Close()
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(os.TempDir(), "dubbogo-lb-shot"), "--window-size=1280,800",
		"--virtual-time-budget="+strconv.Itoa(seconds*1000), "--screenshot="+abs, slow.URL+"/").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, tail(string(out), 5))
	}
	return nil
}
