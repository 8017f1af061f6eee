package it

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/extension"
)

// make demo, shortened (-duration): dubbo-go's random and then every
// balancer of the module each run against the demo's three providers, no
// call fails, and the table comes out with one row per balancer, each
// with calls spread over the providers. It needs no Nacos.
func TestDemoRunsEveryBalancerWithoutError(t *testing.T) {
	parallel(t) // schedule_test.go
	setupOnce.Do(func() { setupErr = build() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	// A call of a 10 ms provider took 3 s, the default timeout, on a
	// fresh machine compiling beside the test: the timeout is generous.
	p := startProc(t, "demo", "demo", nil, "-duration", "500ms", "-timeout", "30s", "-debug", "")
	if err := p.wait(3 * time.Minute); err != nil {
		t.Fatalf("make demo: %v; log:\n%s", err, tail(p.log.String(), 30))
	}
	out := p.log.String()
	i := strings.Index(out, "\nbalancer ")
	if i < 0 {
		t.Fatalf("no table in the output:\n%s", tail(out, 30))
	}
	lines := strings.Split(strings.TrimSpace(out[i+1:]), "\n")
	header := strings.Fields(lines[0])
	providers := len(header) - 7 // balancer, the providers, qps, errors, p50 ms, p99 ms
	var got []string
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != providers+5 {
			break // the end of the table
		}
		got = append(got, f[0])
		qps, _ := strconv.ParseFloat(f[providers+1], 64)
		if f[providers+2] != "0" || !(qps > 0) {
			t.Errorf("%s: %s qps and %s errors, want calls and no error", f[0], f[providers+1], f[providers+2])
		}
		sum := 0.0
		for _, s := range f[1 : providers+1] {
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
			if err != nil {
				t.Errorf("%s: share %q: %v", f[0], s, err)
			}
			sum += v
		}
		if sum < 99 || sum > 101 {
			t.Errorf("%s: the shares add up to %.1f%%, want 100%%: %s", f[0], sum, line)
		}
	}
	if want := append([]string{"random"}, extension.Balancers()...); !slices.Equal(got, want) {
		t.Errorf("table rows %v, want %v:\n%s", got, want, strings.Join(lines, "\n"))
	}
	if m := regexp.MustCompile(`(?i)\bpanic\b`).FindString(out); m != "" {
		t.Errorf("the demo's output mentions %q:\n%s", m, tail(out, 30))
	}
	t.Logf("the demo's table:\n%s", strings.Join(lines[:len(got)+1], "\n"))
}
