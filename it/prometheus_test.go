package it

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/lbmetrics/operators"
)

// The shipped dashboard and alert rules (loadbalance/lbmetrics/operators)
// against a real Prometheus (Debian's package) scraping sample consumers
// every 2 s, each with its own providers in Nacos:
//
//   - healthy: loadaware over three providers that report their load;
//   - faults: warmrandom over one provider that works and two that fail
//     every call, with no cap on ejections, a panic threshold of 80 %
//     (panic mode from the first ejection on, not only while both are
//     out), ejections of 2 s growing by 2 s each time to 20 s (panic mode
//     steady: it lapses only while both failing providers are back at
//     once until 5 failures eject one again, a second on a busy machine;
//     with ejections of 1 to 2 s, that lapse came every 3 s and the 10 s
//     for: of the panic alert never passed), and the working one's weight
//     edited in Nacos every second (a rebuild storm);
//   - idle: ringhash over two providers with one request key, so that one
//     of them gets no pick (the other is the alert's negative control);
//   - quiet: loadaware over a provider that reports its load and one that
//     does not (-load-report=false).
//
// Every panel's query returns data; every alert fires for its scenario
// (ejections, panic mode and the rebuild storm on faults, no picks for the
// idle provider only, missing reports for the quiet provider only), none
// ever fires on healthy (the negative control of them all), and each
// clears once its cause is gone (the failing providers back and working,
// the idle and quiet providers stopped, the edits over).
//
// The rules are the shipped file with every duration divided by 30, for:
// at least 10 s (windows of 10 min become 20 s, for: 10m becomes 20 s,
// for: 1m 10 s): a test of minutes, on the same expressions and
// thresholds.
func TestPrometheusDashboardAndAlertsOnTheSampleFleet(t *testing.T) {
	parallel(t) // alerts are about counts and states: schedule_test.go
	bin := prometheusBinary(t)
	base := setup(t)
	scenario := func(name string) *env {
		e := *base
		e.group = base.group + "_" + name
		return &e
	}
	healthy, faults, idle, quiet := scenario("healthy"), scenario("faults"), scenario("idle"), scenario("quiet")
	ports := map[string]int{}
	for _, name := range []string{"healthy", "faults", "idle", "quiet"} {
		ports[name] = freePort(t)
	}
	prom := startPrometheus(t, bin, ports)

	// One scenario's providers at a time, as other tests start theirs:
	// ten processes connecting to Nacos at once on a busy machine have
	// failed to register ("client not connected").
	healthy.startRegistered(t, providerSpec{name: "h1"}, providerSpec{name: "h2"}, providerSpec{name: "h3"})
	fp := faults.startRegistered(t, providerSpec{name: "good"},
		providerSpec{name: "bad1", args: []string{"-fail-at", "0s"}}, providerSpec{name: "bad2", args: []string{"-fail-at", "0s"}})
	goodInst := faults.waitRegistered(t, fp...)[0]
	bad := fp[1:]
	sticky := idle.startRegistered(t, providerSpec{name: "key1"}, providerSpec{name: "key2"})
	qp := quiet.startRegistered(t, providerSpec{name: "loud"}, providerSpec{name: "mute", args: []string{"-load-report=false"}})
	mute := qp[1]

	// Every consumer paced: the alerts are about states and counts, not
	// volume, and flat out the faults consumer spun through calls that fail
	// at once, starving its own metrics endpoint on a busy machine.
	metrics := func(name string) []string { return []string{"-metrics", strconv.Itoa(ports[name]), "-rate", "50"} }
	faultsConf := editConsumerYAML(t, "        retries: 2\n", "        retries: 2\n        params:\n"+
		"          outlier.max-ejection-percent: \"100\"\n          outlier.panic-threshold: \"80\"\n"+
		"          outlier.base-ejection-time: 2s\n          outlier.max-ejection-time: 20s\n", "consumer-faults.yaml")
	// The healthy consumer names its zone, so that the zones panel has
	// its series (its providers name none: zones stay off, every call
	// as without them).
	healthy.startConsumers(t, 3, consumerSpec{balancer: "loadaware", args: append(metrics("healthy"), "-zone", "az-h")})
	faults.startConsumers(t, 1, consumerSpec{balancer: "warmrandom", args: append(metrics("faults"), "-conf", faultsConf)})
	ic := idle.startConsumers(t, 2, consumerSpec{balancer: "ringhash", args: append(metrics("idle"), "-keys", "1")})[0]
	quiet.startConsumers(t, 2, consumerSpec{balancer: "loadaware", args: metrics("quiet")})
	start := time.Now()
	// The one key goes to one provider (the run's first second says which:
	// the calls that waited for both providers are not in it); the other
	// gets no pick.
	first := ic.next(t, time.Minute)
	cold := sticky[0]
	if first.By["key1"] > 0 {
		cold = sticky[1]
	}
	if first.By[cold.spec.name] != 0 || successes(first) == 0 {
		t.Fatalf("ringhash with one key: %v calls by provider, want them all on one", first.By)
	}

	instance := func(name string) string { return "127.0.0.1:" + strconv.Itoa(ports[name]) }
	want := []alertKey{
		{"DubboLBEjections", instance("faults"), ""},
		{"DubboLBOutlierPanic", instance("faults"), ""},
		{"DubboLBRebuildStorm", instance("faults"), ""},
		{"DubboLBProviderGetsNoPicks", instance("idle"), addr(cold)},
		{"DubboLBLoadReportsMissing", instance("quiet"), addr(mute)},
	}
	// wrong says why a firing alert should not fire: on healthy, or for
	// a provider other than the one of its scenario.
	wrong := func(a alertKey) string {
		switch {
		case a.instance == instance("healthy"):
			return "on the healthy consumer"
		case a.name == "DubboLBProviderGetsNoPicks" && a.provider != addr(cold):
			return "for a provider that gets picks"
		case a.name == "DubboLBLoadReportsMissing" && a.provider != addr(mute):
			return "for a provider that reports"
		}
		return ""
	}
	reported := map[alertKey]bool{}
	check := func(firing map[alertKey]bool) {
		t.Helper()
		for a := range firing {
			if why := wrong(a); why != "" && !reported[a] {
				reported[a] = true
				t.Errorf("%s fires %s: %+v", a.name, why, a)
			}
		}
	}

	// Fire: edit the working provider's weight every second (each edit is
	// a membership change for the consumer) until the storm alert fired,
	// and wait until every alert fired at least once.
	weight := goodInst.Weight
	fired := map[alertKey]time.Duration{}
	deadline := time.Now().Add(6 * time.Minute) // about a minute on an idle machine
	for {
		firing := prom.firing(t)
		check(firing)
		missing := ""
		for _, a := range want {
			if _, ok := fired[a]; !ok && firing[a] {
				fired[a] = time.Since(start).Round(time.Second)
			}
			if _, ok := fired[a]; !ok {
				missing += " " + a.name
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			run := strconv.Itoa(int(time.Since(start).Seconds())) + "s"
			t.Fatalf("not fired after %v:%s; fired: %v\nthe faults consumer, one sample a scrape: panic %s; scrape up %s",
				time.Since(start).Round(time.Second), missing, fired,
				prom.history(t, `dubbo_consumer_lb_outlier_panic{instance="`+instance("faults")+`"}[`+run+`]`),
				prom.history(t, `up{instance="`+instance("faults")+`"}[`+run+`]`))
		}
		if _, ok := fired[want[2]]; !ok {
			if weight == goodInst.Weight { // w, w/2, w…
				weight = goodInst.Weight / 2
			} else {
				weight = goodInst.Weight
			}
			faults.console(t, serviceName, goodInst, weight, true)
		}
		time.Sleep(time.Second) // the evaluation interval
	}
	t.Logf("every alert fired, after: %v", fired)

	// Every panel's query returns data, every variable "All".
	qs, err := operators.Queries(operators.Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	// A gauge is gone from an instant query from the first failed scrape
	// of its target (Prometheus marks it stale), which a busy machine
	// brings about (seen: both loadaware consumers at once, scrapes of 2 s
	// at most): each query is read again until it has data.
	for _, q := range qs {
		expr := operators.Expand(q.Expr, "10s")
		deadline := time.Now().Add(reactDeadline)
		for {
			if n := len(prom.query(t, expr)); n > 0 {
				t.Logf("panel %q: %d series", q.Panel, n)
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("panel %q: no data for %s within %v", q.Panel, expr, reactDeadline)
				break
			}
			time.Sleep(time.Second) // the evaluation interval
		}
	}

	// Clear: the edits stop, the idle and quiet providers leave, and the
	// failing ones come back working, on the same ports (so the faults
	// alerts clear with every provider there, by the window passing).
	for _, p := range append(bad, cold, mute) {
		p.stop()
	}
	cleared := time.Now()
	for i, p := range bad {
		spec := p.spec
		spec.args = nil
		bad[i] = faults.startProvider(t, spec)
	}
	faults.waitRegistered(t, append([]*provider{fp[0]}, bad...)...)
	deadline = time.Now().Add(6 * time.Minute) // the 20 s windows, then for:
	for {
		firing := prom.firing(t)
		check(firing)
		left := ""
		for _, a := range want {
			if firing[a] {
				left += " " + a.name
			}
		}
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still firing %v after their causes went:%s", time.Since(cleared).Round(time.Second), left)
		}
		time.Sleep(time.Second) // the evaluation interval
	}
	t.Logf("every alert cleared within %v", time.Since(cleared).Round(time.Second))
	// ... with the providers that failed there, serving, in no panic: once
	// the consumer has found them again and been scraped since (seen on a
	// busy machine: not yet when the alerts had cleared).
	for _, q := range []string{
		`dubbo_consumer_lb_outlier_panic{instance="` + instance("faults") + `"} == 0`,
		`dubbo_consumer_lb_ejected{instance="` + instance("faults") + `", provider="` + addr(bad[0]) + `"} == 0`,
		`dubbo_consumer_lb_ejected{instance="` + instance("faults") + `", provider="` + addr(bad[1]) + `"} == 0`,
	} {
		deadline := time.Now().Add(reactDeadline)
		for len(prom.query(t, q)) == 0 {
			if time.Now().After(deadline) {
				t.Errorf("no series for %s within %v of the restart", q, reactDeadline)
				break
			}
			time.Sleep(time.Second) // the evaluation interval
		}
	}

	// Over the whole run (Prometheus's ALERTS series keeps every
	// evaluation, between the polls too): nothing fired on the healthy
	// consumer, nor for the wrong provider.
	run := strconv.Itoa(int(time.Since(start).Seconds())+60) + "s"
	for _, a := range prom.query(t, `max_over_time(ALERTS{alertstate="firing"}[`+run+`])`) {
		k := alertKey{a["alertname"], a["instance"], a["provider"]}
		if why := wrong(k); why != "" && !reported[k] {
			t.Errorf("%s fired %s: %+v", k.name, why, k)
		}
	}
}

// alertKey names a firing alert: its name and the labels that place it.
type alertKey struct{ name, instance, provider string }

// addr returns the provider's host:port, as the metrics label it.
func addr(p *provider) string { return "127.0.0.1:" + strconv.Itoa(p.spec.port) }

// prometheusBinary returns Debian's prometheus, skipping the test outside
// CI without one and failing it in CI (.ci/run installs it).
func prometheusBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err == nil {
		return bin
	}
	missing(t, "no prometheus on PATH (apt-get install prometheus; .ci/run installs it)")
	return ""
}

// promServer is a running Prometheus.
type promServer struct {
	*proc
	url string
}

// startPrometheus starts Prometheus scraping the consumers' endpoints on
// ports (which need not answer yet) every 2 s (a scrape that fails marks
// every series of its target stale, which resets the for: of the alerts
// on them: 2 s gives a consumer slowed by a busy machine twice the time
// to answer), with the shipped alert
// rules scaled (scaleRules), and waits until it is ready. It is stopped
// when t ends.
func startPrometheus(t *testing.T, bin string, ports map[string]int) *promServer {
	t.Helper()
	dir := t.TempDir()
	rules := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(rules, []byte(scaleRules(t, string(operators.Alerts), 30)), 0o644); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, p := range ports {
		targets = append(targets, fmt.Sprintf("'127.0.0.1:%d'", p))
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: dubbogo-lb
    static_configs:
      - targets: [%s]
`, rules, strings.Join(targets, ", "))
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	// Watched as every process of the tests: a crash or an unexpected
	// exit fails the test.
	p := runProc(t, "prometheus", exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--log.level=warn"), nil)
	s := &promServer{proc: p, url: "http://" + listen}
	deadline := time.Now().Add(2 * time.Minute) // a busy machine starts it slowly
	for {
		resp, err := httpClient.Get(s.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("prometheus not ready (%v); log:\n%s", err, tail(p.log.String(), 20))
		}
		time.Sleep(200 * time.Millisecond) // polling a server that starts
	}
}

// scaleRules returns the rule file text with every duration in minutes
// (range selectors [10m], for: 5m) divided by factor, in seconds (for: at
// least 10 s), and
// fails t if the file has a duration in another unit, which would escape
// the scaling.
func scaleRules(t *testing.T, text string, factor int) string {
	t.Helper()
	if other := regexp.MustCompile(`(\[|for: )\d+[^m0-9]`).FindString(text); other != "" {
		t.Fatalf("alerts.yml: %q: write durations in minutes, which the test scales", other)
	}
	return regexp.MustCompile(`(\[|for: )(\d+)m`).ReplaceAllStringFunc(text, func(s string) string {
		m := regexp.MustCompile(`(\[|for: )(\d+)m`).FindStringSubmatch(s)
		n, _ := strconv.Atoi(m[2])
		sec := n * 60 / factor
		if m[1] == "for: " {
			// A busy machine stalls a consumer's first calls to a provider
			// for seconds (seen: a report missing for over 4 s, for: 2m
			// scaled, on a healthy consumer at a load average of 60 plus
			// two CPU hogs): no for: shorter than 10 s.
			sec = max(sec, 10)
		}
		return m[1] + strconv.Itoa(sec) + "s"
	})
}

// firing returns the alerts firing now.
func (s *promServer) firing(t *testing.T) map[alertKey]bool {
	t.Helper()
	var r struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	s.api(t, "/api/v1/alerts", &r)
	out := map[alertKey]bool{}
	for _, a := range r.Data.Alerts {
		if a.State == "firing" {
			out[alertKey{a.Labels["alertname"], a.Labels["instance"], a.Labels["provider"]}] = true
		}
	}
	return out
}

// query runs an instant query and returns its series' labels.
func (s *promServer) query(t *testing.T, expr string) []map[string]string {
	t.Helper()
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	s.api(t, "/api/v1/query?query="+url.QueryEscape(expr), &r)
	var out []map[string]string
	for _, x := range r.Data.Result {
		out = append(out, x.Metric)
	}
	return out
}

// history returns the samples of the range query expr (one series
// expected) as runs: "0×12 1×20 (gap 6s) 1×4" for twelve 0s, twenty 1s,
// no sample for 6 s (failed scrapes), four 1s. It is for messages: a
// failed query says so instead of failing t.
func (s *promServer) history(t *testing.T, expr string) string {
	t.Helper()
	var r struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	s.api(t, "/api/v1/query?query="+url.QueryEscape(expr), &r)
	var b strings.Builder
	for i, series := range r.Data.Result {
		if i > 0 {
			b.WriteString("; next series: ")
		}
		last, run, prevAt := "", 0, 0.0
		flush := func() {
			if run > 0 {
				fmt.Fprintf(&b, "%s×%d ", last, run)
			}
		}
		for _, v := range series.Values {
			at, _ := v[0].(float64)
			val, _ := v[1].(string)
			if prevAt != 0 && at-prevAt > 3 { // scrapes every 2 s
				flush()
				run = 0
				fmt.Fprintf(&b, "(gap %.0fs) ", at-prevAt)
			}
			if val != last {
				flush()
				last, run = val, 0
			}
			run++
			prevAt = at
		}
		flush()
	}
	if b.Len() == 0 {
		return "no samples"
	}
	return strings.TrimSpace(b.String())
}

// api GETs path of the HTTP API into v, failing t on an error answer.
func (s *promServer) api(t *testing.T, path string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a busy machine
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
	body := string(b)
	var status struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &status); err != nil || status.Status != "success" {
		t.Fatalf("prometheus %s: %v %s: %s", path, err, status.Error, tail(body, 5))
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatal(err)
	}
}
