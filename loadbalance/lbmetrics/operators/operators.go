// Package operators ships what an operator imports to watch the
// balancers: a Grafana dashboard (dashboard.json) and Prometheus alert
// rules (alerts.yml, with their promtool tests in alerts_test.yml), all of
// them on the dubbo_consumer_lb_* metrics of package lbmetrics. The files
// are embedded, so a program can serve or provision them; the README
// gives each alert's runbook line, and DESIGN.md in package lbmetrics how
// they are tested against a real Prometheus.
package operators

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// Dashboard is the Grafana dashboard, as JSON.
//
//go:embed dashboard.json
var Dashboard []byte

// Alerts is the Prometheus rule file of the alerts.
//
//go:embed alerts.yml
var Alerts []byte

// Query is one query of a dashboard panel.
type Query struct {
	Panel string // the panel's title
	Expr  string // the PromQL, with the dashboard's variables in it
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"` // of a collapsed row
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// Queries returns every query of every panel of the dashboard dashboard
// (Grafana's JSON model), rows' panels included, in order. It fails on
// JSON that does not parse and on a graph panel without a query.
func Queries(dashboard []byte) ([]Query, error) {
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var out []Query
	var walk func([]panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			if p.Type == "row" {
				if err := walk(p.Panels); err != nil {
					return err
				}
				continue
			}
			if len(p.Targets) == 0 {
				return fmt.Errorf("dashboard: panel %q has no query", p.Title)
			}
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					return fmt.Errorf("dashboard: panel %q has an empty query", p.Title)
				}
				out = append(out, Query{Panel: p.Title, Expr: t.Expr})
			}
		}
		return nil
	}
	return out, walk(d.Panels)
}

// Expand returns expr with Grafana's variables replaced as a dashboard
// whose every variable is "All" would: $service, $method, $balancer and
// $provider match anything, and $__rate_interval is rateInterval.
func Expand(expr, rateInterval string) string {
	return strings.NewReplacer("$__rate_interval", rateInterval,
		"$service", ".*", "$method", ".*", "$balancer", ".*", "$provider", ".*").Replace(expr)
}
