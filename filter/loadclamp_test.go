package filter

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// A hostile report is stored clamped: its numbers in range, its time in
// the far future read as now, so that the provider's next honest report
// is not dropped as older; the provider is named in one WARN line however
// often it sends such reports.
func TestHostileReportIsClampedAndNamedOnce(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	defer lblog.Capture(func(line string) { mu.Lock(); logs = append(logs, line); mu.Unlock() })()
	f := New(Options{})
	ivk := &trailerInvoker{fakeInvoker: newInvoker(t, map[string]string{"loadbalance": "loadaware", "at": "hostile"}, nil),
		trailer: http.Header{
			loadreport.TrailerJava: {"curTime:999999999999999999,load:1e50"},
			loadreport.TrailerOwn:  {"cpu:1e-99,cap:1e-99,qps:1e-99,eps:1e12"},
		}}
	for range 3 {
		f.Invoke(context.Background(), ivk, invocation.NewRPCInvocation("Say", nil, nil))
	}
	l := rpcstatus.Of(ivk.GetURL()).Load()
	r := l.Report()
	assert.LessOrEqual(t, r.TimeMs, time.Now().UnixMilli(), "a time ahead reads as now")
	assert.Equal(t, float64(loadreport.MaxValue), r.JavaLoad)
	assert.Equal(t, float64(loadreport.MaxValue), r.EPS)
	assert.Zero(t, r.CPU+r.Capacity+r.QPS, "tiny values read 0")
	mu.Lock()
	require.Len(t, logs, 1, "one WARN for the provider: %q", logs)
	assert.Contains(t, logs[0], ivk.GetURL().Location)
	assert.Contains(t, logs[0], "t,load,cpu,cap,qps,eps")
	mu.Unlock()

	honest := strconv.FormatInt(time.Now().UnixMilli()+1, 10)
	ivk.trailer = http.Header{loadreport.TrailerJava: {"curTime:" + honest + ",load:12.5"}}
	f.Invoke(context.Background(), ivk, invocation.NewRPCInvocation("Say", nil, nil))
	assert.Equal(t, 12.5, l.Report().JavaLoad, "the next honest report is stored")
	mu.Lock()
	assert.Len(t, logs, 1, "%q", strings.Join(logs, "\n"))
	mu.Unlock()
}
