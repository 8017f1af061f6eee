package random

import (
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
)

// pick draws a slot of v in proportion to its warm weight.
func (b *Balancer) pick(v *member.View[algo.Alias], _ base.Invocation) int {
	if v.Table == nil {
		return algo.IntN(b.Rand(), v.Len())
	}
	return v.Table.Pick(b.Rand())
}
