package rpcstatus

import (
	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/internal/urlmap"
)

// Providers is the store shared by the active filter and the balancers. A
// provider is identified by its *common.URL: every invoker of a consumer's
// filter chain returns the same URL, and dubbo-go builds a new one when the
// registry changes a provider, whose statistics then start afresh.
var Providers urlmap.Store[common.URL, Provider]

// Of returns the statistics of the provider whose URL is u.
func Of(u *common.URL) *Provider { return Providers.Get(u) }
