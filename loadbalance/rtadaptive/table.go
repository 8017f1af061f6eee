package rtadaptive

import (
	"sync/atomic"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// table is the balancer's state for one snapshot of providers.
type table struct {
	// alias draws candidates in proportion to warm weight; nil when every
	// weight is equal (candidates are then two distinct providers).
	alias *algo.Alias
	// providers is what the balancer keeps of each provider.
	providers []provider
}

// provider is the balancer's state of one provider.
type provider struct {
	stats *rpcstatus.Stats // the Set's, for the method
	// errCost is what an error of the provider is charged at least.
	errCost time.Duration
	// err tracks the provider's last error, copied from the snapshot
	// before for a provider that stays. (An error
	// seen on the old snapshot after the copy is not lost: the new one
	// sees the failure count differ from its copy and dates the error
	// then.)
	err errState
}

// errState remembers when a provider's failure count last grew.
type errState struct {
	failed atomic.Int64 // Stats.Failed() when last seen
	at     atomic.Int64 // when it was seen to grow (ns); 0: never
}

// build makes the table of a snapshot, carrying each staying provider's
// state over from prev: only newcomers' URLs are read.
func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	t := &table{alias: s.WarmAlias(), providers: make([]provider, s.Len())}
	member.Carry(s, prev, func(i, j int) {
		p, q := &t.providers[i], &prev.Table.providers[j]
		p.stats = s.Stat(i)
		p.err.failed.Store(q.err.failed.Load())
		p.err.at.Store(q.err.at.Load())
		p.errCost = q.errCost
	})
	for i := range t.providers {
		p := &t.providers[i]
		if p.stats != nil {
			continue // carried over
		}
		p.stats = s.Stat(i)
		p.errCost = b.errorCost
		if p.errCost == 0 {
			p.errCost, _ = urlparam.MethodTimeout(s.Invokers[i].GetURL(), s.Method)
		}
		// First seen: errors already in its window date from its last
		// completion at the latest.
		p.err.failed.Store(p.stats.Failed())
		if sum := p.stats.Window().Summary(); sum.Errors > 0 {
			p.err.at.Store(max(sum.Last, 1))
		}
	}
	return t
}
