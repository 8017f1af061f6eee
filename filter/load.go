package filter

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// Load reports. The filter asks a provider for its load on every call of a
// (provider, method) for which Options.AskLoad says so, as Dubbo Java's
// adaptive balancer does: it sends the attachment loadreport.AskKey
// ("lb_adaptive"), which Java providers answer (ProfilerServerFilter) and
// so do Go providers with the lbload filter (package providerload). The
// answer comes back as result attachments, over triple as response
// trailers, which dubbo-go v3.3.2 hands to a consumer only through an
// invocation attribute (constant.ResponseTrailerKey, a *http.Header that
// its triple invoker fills); the filter lends one from a pool unless the
// caller set its own. The report is parsed without allocating and stored
// on the provider's statistics (rpcstatus.Provider.Load), where the
// loadaware balancer reads it. Its numbers are clamped into the ranges of
// package loadreport and its time is at most the consumer's wall clock
// (loadreport.Report.NotAfter); a provider whose report needed a clamp is
// named in one WARN line, once.

// LoadReportKey is the URL parameter (reference params, method level
// first: methods.<m>.lb.load-report) that turns load reports on ("true")
// or off ("false") for the calls of a method, whatever the balancer.
const LoadReportKey = "lb.load-report"

// loadBalancers are the balancers whose calls ask for load reports when
// LoadReportKey is not set: this module's loadaware, and adaptive (Dubbo
// Java's AdaptiveLoadBalance, which asks on every call).
var loadBalancers = []string{"loadaware", "adaptive"}

// asksLoad is the default Options.AskLoad: LoadReportKey if set, else
// whether the method's balancer (the loadbalance parameter, method level
// first, as dubbo-go's cluster reads it) is one of loadBalancers. Read
// once per (provider, method).
func asksLoad(u *common.URL, method string) bool {
	switch strings.ToLower(urlparam.MethodParam(u, method, LoadReportKey)) {
	case "true":
		return true
	case "false":
		return false
	}
	lb := urlparam.MethodParam(u, method, constant.LoadbalanceKey)
	for _, name := range loadBalancers {
		if lb == name {
			return true
		}
	}
	return false
}

// askValue is loadreport.AskValue boxed once, so that setting it does not
// allocate.
var askValue any = loadreport.AskValue

var trailers = sync.Pool{New: func() any { return new(http.Header) }}

// askLoad adds the request for a report to inv and returns the trailer
// header lent to it, or nil when the caller set its own.
func askLoad(inv base.Invocation) *http.Header {
	inv.SetAttachment(loadreport.AskKey, askValue)
	if v, ok := inv.GetAttribute(constant.ResponseTrailerKey); ok && v != nil {
		return nil
	}
	h := trailers.Get().(*http.Header)
	inv.SetAttribute(constant.ResponseTrailerKey, h)
	return h
}

// readLoad reads the report of a call's answer, from the trailers (triple)
// or the result's attachments (dubbo, or a caller's own trailer header),
// stores it on p at now and returns the lent header to its pool.
func readLoad(p *rpcstatus.Provider, now int64, inv base.Invocation, res result.Result, lent *http.Header) {
	var r loadreport.Report
	h := lent
	if h == nil {
		if v, ok := inv.GetAttribute(constant.ResponseTrailerKey); ok {
			h, _ = v.(*http.Header)
		}
	}
	if h != nil && *h != nil {
		parseFirst((*h)[loadreport.TrailerJava], &r)
		parseFirst((*h)[loadreport.TrailerOwn], &r)
	}
	if r.Has == 0 && res != nil {
		var att map[string]any
		if rr, ok := res.(*result.RPCResult); ok {
			att = rr.Attrs // Attachments() would make a map
		} else {
			att = res.Attachments()
		}
		parseAny(att[loadreport.JavaKey], &r)
		parseAny(att[loadreport.OwnKey], &r)
	}
	if r.Has&loadreport.HasTime != 0 {
		r.NotAfter(time.Now().UnixMilli())
	}
	if r.Clamped != 0 {
		warnClamped(p, r.Clamped)
	}
	if r.Has != 0 {
		p.Load().Store(now, &r)
	}
	if lent != nil {
		inv.SetAttribute(constant.ResponseTrailerKey, nil)
		*lent = nil
		trailers.Put(lent)
	}
}

// clampWarned marks the providers already named for a clamped report,
// through weak pointers: an entry goes with its provider's statistics.
var clampWarned urlmap.Store[rpcstatus.Provider, atomic.Bool]

// warnClamped names the provider whose statistics are p, once, for a
// report whose fields clamped were out of range. After the first time it
// takes no lock and allocates nothing; the first time it finds p's
// address among the providers (rpcstatus.Range).
func warnClamped(p *rpcstatus.Provider, clamped loadreport.Field) {
	if w := clampWarned.Get(p); w.Load() || !w.CompareAndSwap(false, true) {
		return
	}
	addr := "(unknown)"
	rpcstatus.Range(func(u *common.URL, q *rpcstatus.Provider) bool {
		if q == p {
			addr = u.Location
		}
		return q != p
	})
	lblog.Warnf("provider %s reported load out of range (%s): clamped to [0, %g] (cpu [0, %g]; positive values below %g read 0, a time ahead reads now); logged once per provider",
		addr, clamped, float64(loadreport.MaxValue), float64(loadreport.MaxCPU), loadreport.Resolution)
}

func parseFirst(vs []string, r *loadreport.Report) {
	if len(vs) > 0 {
		loadreport.Parse(vs[0], r)
	}
}

func parseAny(v any, r *loadreport.Report) {
	switch s := v.(type) {
	case string:
		loadreport.Parse(s, r)
	case []string:
		parseFirst(s, r)
	}
}
