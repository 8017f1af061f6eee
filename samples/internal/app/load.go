package app

import (
	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/rpcstatus"
)

// ReportedLoad returns the utilization each provider (host:port) last
// reported to this process, for the providers that sent a report; nil
// when none did.
func ReportedLoad() map[string]float64 {
	var out map[string]float64
	rpcstatus.Providers.Range(func(k *common.URL, p *rpcstatus.Provider) bool {
		if util, ok := p.Load().Utilization(); ok {
			if out == nil {
				out = map[string]float64{}
			}
			out[k.Location] = util
		}
		return true
	})
	return out
}
