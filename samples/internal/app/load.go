package app

import (
	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/rpcstatus"
)

// ReportedLoad returns, for the providers (host:port) that sent this
// process a load report, the utilization each last reported (util: Go
// providers with the lbload filter) and Dubbo Java's load (java: the
// machine's load average × 100 / CPUs, which Java providers send, and Go
// providers with lbload too); a map is nil when no provider sent its field.
func ReportedLoad() (util, java map[string]float64) {
	rpcstatus.Range(func(k *common.URL, p *rpcstatus.Provider) bool {
		if u, ok := p.Load().Utilization(); ok {
			if util == nil {
				util = map[string]float64{}
			}
			util[k.Location] = u
		}
		if j, ok := p.Load().JavaLoad(); ok {
			if java == nil {
				java = map[string]float64{}
			}
			java[k.Location] = j
		}
		return true
	})
	return util, java
}
