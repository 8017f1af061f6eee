package lbmetrics

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
)

// rawProvider returns a provider of service at 127.0.0.1:port with params,
// its values any bytes, as a registry or a direct URL may bring them.
func rawProvider(port int, service string, params map[string]string) base.Invoker {
	q := url.Values{}
	q.Set("interface", service)
	q.Set("weight", "100")
	for k, v := range params {
		q.Set(k, v)
	}
	u, err := common.NewURL(fmt.Sprintf("tri://127.0.0.1:%d/%s?%s", port, url.PathEscape(service), q.Encode()))
	if err != nil {
		panic(err)
	}
	return base.NewBaseInvoker(u)
}

// checkLabels fails unless every label value of mfs is valid UTF-8 of at
// most MaxLabelBytes bytes, and returns how many series there are.
func checkLabels(t testing.TB, mfs []*dto.MetricFamily) int {
	t.Helper()
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			n++
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); !utf8.ValidString(v) || len(v) > MaxLabelBytes {
					t.Fatalf("%s{%s=%q}: not a valid label value", mf.GetName(), l.GetName(), v)
				}
			}
		}
	}
	return n
}

// Invalid UTF-8 in every label source (application, service, group,
// version, method, zone) and a long application: the real balancer's
// series are gathered, every label valid, the invalid bytes read U+FFFD.
// Two methods that read alike once made valid are sent once, not twice
// (which would fail the scrape).
func TestCollectorSurvivesInvalidUTF8Labels(t *testing.T) {
	lbtest.CaptureLogs(t)
	bad := "\xff\xfe"
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	params := map[string]string{"application": bad, "application.version": bad, "group": bad, "version": bad,
		"lb.zone": bad, "lb.zone.local": "\xfe", "lb.zone.callers": "\xfe:1"}
	long := strings.Repeat("é", 300) + bad
	list := []base.Invoker{rawProvider(20600, bad, params), rawProvider(20601, bad, params),
		rawProvider(20602, bad, map[string]string{"application": long})}
	for _, method := range []string{bad, "\xfe", "Say"} {
		lbtest.Counts(lb, list, lbtest.Call(method), 10)
	}
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name+bad, lb)
	c := New(Options{Registry: reg, Application: bad, AppVersion: bad, Hostname: bad, IP: bad})
	pr := prom.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	require.Positive(t, checkLabels(t, mfs))

	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	picks := byName[metricPicksTotal].GetMetric()
	require.Len(t, picks, 6, "3 providers × the methods \\ufffd (twice, sent once) and Say")
	var total float64
	apps := map[string]bool{}
	for _, m := range picks {
		total += m.GetCounter().GetValue()
		apps[label(m, "application_name")] = true
		assert.Equal(t, "\ufffd", label(m, "interface"))
		assert.Equal(t, warmrandom.Name+"\ufffd", label(m, labelBalancer))
	}
	assert.Equal(t, 20.0, total, "the real series, 10 picks each: Say's, and of the two that read alike the first only")
	assert.True(t, apps["\ufffd"], "%q", apps)
	cut := strings.Repeat("é", MaxLabelBytes/2)
	assert.True(t, apps[cut], "a long value is cut to MaxLabelBytes at a character boundary")
}

func TestLabelValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"shop", "shop"},
		{"a\xff\xfeb", "a\ufffdb"},
		{"\xff", "\ufffd"},
		{strings.Repeat("x", MaxLabelBytes), strings.Repeat("x", MaxLabelBytes)},
		{strings.Repeat("x", MaxLabelBytes+1), strings.Repeat("x", MaxLabelBytes)},
		{"x" + strings.Repeat("é", MaxLabelBytes), "x" + strings.Repeat("é", (MaxLabelBytes-1)/2)},
		{strings.Repeat("\xff", 2*MaxLabelBytes), "\ufffd"},
		{strings.Repeat("a\xff", MaxLabelBytes), strings.Repeat("a\ufffd", MaxLabelBytes/4)},
	} {
		got := labelValue(tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.True(t, utf8.ValidString(got) && len(got) <= MaxLabelBytes, "%q", got)
	}
	s := "shop"
	assert.Zero(t, testing.AllocsPerRun(10, func() { s = labelValue(s) }), "a valid value is not copied")
}

// fuzzSource describes one method of two providers, every string from
// the fuzzer.
type fuzzSource struct{ methods []describe.Method }

func (f fuzzSource) Describe(int64) []describe.Method { return f.methods }
func (fuzzSource) Rebuilds() describe.Rebuilds        { return describe.Rebuilds{Membership: 1} }

// FuzzCollectorLabels feeds arbitrary bytes to every label source of the
// real Collector (provider URL parameters, service, method, address, zone,
// balancer name, the Collector's own options) and gathers it: no panic, no
// error, every label value valid UTF-8 of at most MaxLabelBytes bytes.
func FuzzCollectorLabels(f *testing.F) {
	for _, s := range [][3]string{
		{"shop", "org.example.Greeter", "Say"},
		{"\xff\xfe", "\xff", "\xfe"},
		{"a\xffb", "a\xfeb", "a\xfdb"},
		{"", "", ""},
		{strings.Repeat("é", 200) + "\xff", "\xc3", "\xe2\x82"},
	} {
		f.Add(s[0], s[1], s[2], "127.0.0.1:20000", "az-a")
	}
	f.Fuzz(func(t *testing.T, app, service, method, address, zone string) {
		u := common.NewURLWithOptions(common.WithProtocol("tri"), common.WithIp("127.0.0.1"), common.WithPort("20000"),
			common.WithPath(service), common.WithParamsValue(constant.InterfaceKey, service),
			common.WithParamsValue(constant.ApplicationKey, app), common.WithParamsValue(constant.AppVersionKey, method),
			common.WithParamsValue(constant.GroupKey, zone), common.WithParamsValue(constant.VersionKey, address))
		m := describe.Method{Service: service, Method: method, Zones: &describe.Zones{Local: zone, Mode: "spill", LocalShare: 0.5},
			Providers: []describe.Provider{
				{Address: address, Zone: zone, URL: u, Picks: 1, Reported: &describe.Reported{QPS: 1}},
				{Address: address + "\xff", Zone: app, URL: u, Picks: 2},
				{Address: address, Zone: method, URL: nil, Picks: 3},
			}}
		reg := describe.New(describe.Options{})
		reg.Register(app, fuzzSource{[]describe.Method{m}})
		reg.Register(method, fuzzSource{[]describe.Method{m, m}})
		// Never empty: New would look this host's name and address up.
		c := New(Options{Registry: reg, Application: app, AppVersion: service, Hostname: "h" + address, IP: "i" + zone})
		pr := prom.NewPedanticRegistry()
		if err := pr.Register(c); err != nil {
			t.Fatal(err)
		}
		mfs, err := pr.Gather()
		if err != nil {
			t.Fatalf("Gather: %v", err)
		}
		if checkLabels(t, mfs) == 0 {
			t.Fatal("no series")
		}
	})
}
