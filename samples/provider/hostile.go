package main

import (
	"context"

	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	dgfilter "dubbo.apache.org/dubbo-go/v3/filter"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"

	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// hostileLoadName is the provider filter of -hostile-load-report.
const hostileLoadName = "hostileload"

// hostileLoad answers every call that asks for a load report with report,
// verbatim, as a provider that lies or sends garbage would: for tests of
// what a consumer makes of any bytes a provider reports. Put first in the
// chain, it overwrites what lbload answered.
type hostileLoad struct{ report string }

// Invoke passes the call on and sets the report on its result.
func (h hostileLoad) Invoke(ctx context.Context, invoker base.Invoker, inv base.Invocation) result.Result {
	res := invoker.Invoke(ctx, inv)
	if _, asks := inv.GetAttachment(loadreport.AskKey); asks && res != nil {
		res.AddAttachment(loadreport.OwnKey, h.report)
	}
	return res
}

// OnResponse returns res unchanged.
func (hostileLoad) OnResponse(_ context.Context, res result.Result, _ base.Invoker, _ base.Invocation) result.Result {
	return res
}

// registerHostileLoad registers the filter answering report.
func registerHostileLoad(report string) {
	f := hostileLoad{report}
	dgext.SetFilter(hostileLoadName, func() dgfilter.Filter { return f })
}
