package rpcstatus

import (
	"weak"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/urlmap"
)

// providers is the store shared by the active filter and the balancers. A
// provider is identified by its *common.URL: every invoker of a consumer's
// filter chain returns the same URL, and dubbo-go builds a new one when the
// registry changes a provider, whose statistics then start afresh. An
// entry goes when its URL is no longer reachable.
var providers urlmap.Store[common.URL, Provider]

// Of returns the statistics of the provider whose URL is u, made empty on
// first use.
func Of(u *common.URL) *Provider {
	p := providers.Get(u)
	if p.url.Load() == nil {
		w := weak.Make(u)
		p.url.CompareAndSwap(nil, &w)
	}
	return p
}

// Lookup returns the statistics of the provider whose URL is u, or nil when
// nothing has recorded or asked for any.
func Lookup(u *common.URL) *Provider { return providers.Load(u) }

// Range calls f for every provider with statistics, in no particular order,
// until f returns false.
func Range(f func(u *common.URL, p *Provider) bool) { providers.Range(f) }

// destroyedURL is the URL that dubbo-go's invokers answer once destroyed:
// one placeholder for them all, without host, port or service.
var destroyedURL = new(base.BaseInvoker).GetURL()

// Destroyed reports whether u is the URL of a destroyed invoker (dubbo-go
// destroys the invoker of a provider that left, and a call may still hold
// the list from before): it identifies no provider, and statistics kept
// under it would mix those of every destroyed invoker of the process.
func Destroyed(u *common.URL) bool { return u == destroyedURL }
