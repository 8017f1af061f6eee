package skeleton

import (
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Describe implements describe.Source: every (service, method) the
// balancer holds a snapshot of, with the providers still there, their
// figures read at now (rpcstatus.Nanotime's clock). Off the hot path.
func (b *Balancer[T]) Describe(now int64) []describe.Method {
	var out []describe.Method
	b.views.Range(func(v *member.View[T]) {
		if m, ok := b.describe(v, now); ok {
			out = append(out, m)
		}
	})
	return out
}

// Rebuilds implements describe.Source.
func (b *Balancer[T]) Rebuilds() describe.Rebuilds {
	membership, warmup := b.views.Rebuilds()
	return describe.Rebuilds{Membership: membership, Warmup: warmup, InterimPicks: b.interimPicks.Load()}
}

// describe describes v; ok is false when every provider of v has left.
func (b *Balancer[T]) describe(v *member.View[T], now int64) (m describe.Method, ok bool) {
	ps := make([]describe.Provider, v.Len())
	for i, inv := range v.Invokers {
		st := v.Stat(i)
		p := &ps[i]
		*p = describe.Provider{URL: inv.GetURL(), Stats: st, Zone: v.Zone(i), Weight: v.Weight(i), Picks: st.Picks(),
			InFlight: st.Active(), Calls: st.Total(), Failures: st.Failed(), Ejections: st.Ejections(),
			Reported: reported(v.Provider(i).Load(), now)}
		if d, ok := st.EWMA().Value(now); ok {
			p.LatencyMs = float64(d) / 1e6
		}
		switch {
		case !inv.IsAvailable():
			p.State = describe.StateUnavailable
		case v.IsEjected(i):
			p.State = describe.StateEjected
		case v.Meta(i).Weight == 0:
			p.State = describe.StateDrained
		case v.Weight(i) < v.Meta(i).Weight:
			p.State = describe.StateWarming
		default:
			p.State = describe.StateOK
		}
	}
	if b.spec.Describe != nil {
		b.spec.Describe(v, now, ps)
	}
	kept := ps[:0]
	for i := range ps {
		// A destroyed invoker (a provider that left) answers another URL.
		if pr := v.Provider(i); rpcstatus.Destroyed(ps[i].URL) || pr == nil || !pr.IsOf(ps[i].URL) {
			continue
		}
		ps[i].Address = ps[i].URL.Location
		kept = append(kept, ps[i])
	}
	if len(kept) == 0 {
		return m, false
	}
	u := kept[0].URL
	return describe.Method{
		Service: u.ServiceKey(), Interface: u.Service(), Group: u.Group(), Version: u.Version(),
		Method: v.Method, Panic: v.Panic, Zones: zones(v.Zoning), Providers: kept,
	}, true
}

// zones describes a snapshot's zone-aware routing; nil when there is none.
func zones[T any](zn *member.Zoning[T]) *describe.Zones {
	if zn == nil {
		return nil
	}
	z := &describe.Zones{Local: zn.Local, Mode: zn.Plan.Mode.String()}
	if zn.Plan.Mode != zone.Off {
		z.LocalShare = zn.Plan.LocalShare
	}
	return z
}

// reported describes the last load report l holds at now, nil if none.
func reported(l *rpcstatus.Load, now int64) *describe.Reported {
	at := l.At()
	if at == 0 {
		return nil
	}
	r := l.Report()
	d := &describe.Reported{AgeSeconds: float64(max(now-at, 0)) / 1e9, CPU: r.CPU, InFlight: r.Inflight,
		Capacity: r.Capacity, QPS: r.QPS, EPS: r.EPS}
	if u, ok := l.Utilization(); ok {
		d.Utilization = &u
	}
	if j, ok := l.JavaLoad(); ok {
		d.JavaLoad = &j
	}
	return d
}
