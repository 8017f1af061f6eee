package operators

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/lbmetrics"
)

// The dashboard parses, has its variables (service, method, balancer,
// provider) and a query in every panel, and names no metric that
// lbmetrics does not export.
func TestDashboard(t *testing.T) {
	var d struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(Dashboard, &d))
	assert.NotEmpty(t, d.UID)
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	assert.Subset(t, vars, []string{"service", "method", "balancer", "provider"})

	qs, err := Queries(Dashboard)
	require.NoError(t, err)
	panels := map[string]bool{}
	for _, q := range qs {
		panels[q.Panel] = true
		assert.Empty(t, unknownMetrics(q.Expr), "panel %q: %s", q.Panel, q.Expr)
		assert.NotEmpty(t, metricName.FindAllString(q.Expr, -1), "panel %q reads none of the module's metrics", q.Panel)
		assert.NotContains(t, Expand(q.Expr, "1m"), "$", "panel %q: a variable Expand does not know", q.Panel)
	}
	for _, want := range []string{"Share of picks per provider", "Calls in flight", "Latency, peak EWMA",
		"Latency quantiles (histogram)", "Failures per second", "Effective weight, % of the total",
		"Ejected providers and panic mode", "Reported utilization and machine load", "Snapshot rebuilds per minute"} {
		assert.True(t, panels[want], "no panel %q", want)
	}
	assert.Empty(t, unknownMetrics(string(Dashboard)))
}

// The alert rules name only exported metrics, and the five alerts exist.
func TestAlertsNameExportedMetrics(t *testing.T) {
	text := string(Alerts)
	assert.Empty(t, unknownMetrics(text))
	for _, name := range []string{"DubboLBEjections", "DubboLBOutlierPanic", "DubboLBProviderGetsNoPicks",
		"DubboLBLoadReportsMissing", "DubboLBRebuildStorm"} {
		assert.Contains(t, text, "- alert: "+name+"\n")
	}
}

// The checks above catch what they look for: a name from before the
// renames, a misspelling, a panel without a query, bad JSON.
func TestChecksCatchMistakes(t *testing.T) {
	assert.Equal(t, []string{"dubbo_consumer_lb_latency_milliseconds"},
		unknownMetrics(`rate(dubbo_consumer_lb_latency_milliseconds[1m]) + dubbo_consumer_lb_weight`))
	assert.Equal(t, []string{"dubbo_consumer_lb_picks_totl"}, unknownMetrics(`dubbo_consumer_lb_picks_totl`))
	assert.Empty(t, unknownMetrics(`dubbo_consumer_lb_latency_seconds_bucket dubbo_consumer_lb_latency_seconds_count`))
	assert.Equal(t, []string{"dubbo_consumer_lb_weight_bucket"}, unknownMetrics(`dubbo_consumer_lb_weight_bucket`), "only a histogram has buckets")

	_, err := Queries([]byte(`{"panels": [{"type": "row", "panels": [{"title": "x", "type": "timeseries"}]}]}`))
	assert.ErrorContains(t, err, `panel "x" has no query`)
	_, err = Queries([]byte(`{"panels": [`))
	assert.Error(t, err)
	assert.Equal(t, `rate(m{a=~".*"}[5s])`, Expand(`rate(m{a=~"$service"}[$__rate_interval])`, "5s"))
	assert.False(t, strings.Contains(Expand("$provider $balancer $method", "1m"), "$"))
}

// metricName matches the names of the module's metrics in PromQL.
var metricName = regexp.MustCompile(`dubbo_consumer_lb_[a-z_]+`)

// histograms are the histograms of lbmetrics.Names().
var histograms = []string{"dubbo_consumer_lb_latency_seconds", "dubbo_consumer_lb_method_latency_seconds"}

// unknownMetrics returns the dubbo_consumer_lb_* names in text (PromQL, a
// rule file, a dashboard) that package lbmetrics does not export; a
// histogram's _bucket, _sum and _count series count as its own.
func unknownMetrics(text string) []string {
	var out []string
	for _, name := range metricName.FindAllString(text, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if h := strings.TrimSuffix(name, suffix); h != name && slices.Contains(histograms, h) {
				base = h
			}
		}
		if !slices.Contains(lbmetrics.Names(), base) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
