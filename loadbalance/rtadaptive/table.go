package rtadaptive

import (
	"sync/atomic"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
)

// table is the balancer's state for one snapshot of providers.
type table struct {
	// alias draws candidates in proportion to warm weight; nil when every
	// weight is equal (candidates are then two distinct providers).
	alias *algo.Alias
	// errCost is what an error of each provider is charged at least.
	errCost []time.Duration
	// errs tracks each provider's last error, copied from the snapshot
	// before for the providers that stay. (An error seen on the old
	// snapshot after the copy is not lost: the new one sees the failure
	// count differ from its copy and dates the error then.)
	errs []errState
}

// errState remembers when a provider's failure count last grew.
type errState struct {
	failed atomic.Int64 // Stats.Failed() when last seen
	at     atomic.Int64 // when it was seen to grow (ns); 0: never
}

// build makes the table of a snapshot, carrying each staying provider's
// error state and error cost over from prev: only newcomers' URLs are read.
func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	n := s.Len()
	t := &table{errCost: make([]time.Duration, n), errs: make([]errState, n)}
	t.alias = s.WarmAlias()
	kept := make([]bool, n)
	member.Carry(s, prev, func(i, j int) {
		es, old := &t.errs[i], &prev.Table.errs[j]
		es.failed.Store(old.failed.Load())
		es.at.Store(old.at.Load())
		t.errCost[i] = prev.Table.errCost[j]
		kept[i] = true
	})
	for i, inv := range s.Invokers {
		if kept[i] {
			continue
		}
		t.errCost[i] = b.errorCost
		if t.errCost[i] == 0 {
			t.errCost[i], _ = urlparam.MethodTimeout(inv.GetURL(), s.Method)
		}
		// First seen: errors already in its window date from its last
		// completion at the latest.
		es, st := &t.errs[i], s.Stat(i)
		es.failed.Store(st.Failed())
		if sum := st.Window().Summary(); sum.Errors > 0 {
			es.at.Store(max(sum.Last, 1))
		}
	}
	return t
}
