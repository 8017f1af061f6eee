package rtadaptive

import (
	"sync/atomic"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// table is a snapshot's state.
type table struct {
	alias     *algo.Alias // of the warm weights; nil when they are equal
	providers []provider
}

// provider is the balancer's state of one provider.
type provider struct {
	stats   *rpcstatus.Stats // the Set's, for the method
	errCost time.Duration    // what an error is charged at least
	// err is carried over from the snapshot before; an error seen there
	// after the copy is dated when the new one sees the count differ.
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
