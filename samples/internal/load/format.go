package load

import (
	"fmt"
	"io"
	"strings"

	"github.com/dubbogo-lb/lb/internal/callstats"
)

// FormatInterval returns one line for an interval: time, throughput,
// errors, latency and the share and mean latency of each provider, in the
// order of names.
func FormatInterval(s callstats.Stats, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs %7.0f qps  err %-4d p50 %6.2fms  p99 %7.2fms |", s.At, s.QPS, s.Errors, s.P50Ms, s.P99Ms)
	for _, n := range names {
		fmt.Fprintf(&b, "  %s %5.1f%% %6.2fms", n, s.Share[n], s.MeanMs[n])
	}
	return b.String()
}

// Row is one line of a side-by-side comparison: a label (the balancer)
// and the totals of its run.
type Row struct {
	Label string
	Stats callstats.Stats
}

// WriteTable writes rows side by side: the share of each provider in
// names, the throughput, the errors and the latency quantiles.
func WriteTable(w io.Writer, names []string, rows []Row) {
	width := len("balancer")
	for _, r := range rows {
		width = max(width, len(r.Label))
	}
	cols := make([]int, len(names))
	fmt.Fprintf(w, "%-*s", width, "balancer")
	for i, n := range names {
		cols[i] = max(len(n), 6)
		fmt.Fprintf(w, "  %*s", cols[i], n)
	}
	fmt.Fprintf(w, "  %8s  %6s  %8s  %8s\n", "qps", "errors", "p50 ms", "p99 ms")
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s", width, r.Label)
		for i, n := range names {
			fmt.Fprintf(w, "  %*s", cols[i], fmt.Sprintf("%.1f%%", r.Stats.Share[n]))
		}
		fmt.Fprintf(w, "  %8.0f  %6d  %8.2f  %8.2f\n", r.Stats.QPS, r.Stats.Errors, r.Stats.P50Ms, r.Stats.P99Ms)
	}
}
