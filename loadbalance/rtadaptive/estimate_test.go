package rtadaptive

import (
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
)

// providerEstimate is what the balancer knows about one provider when it
// compares it with another, as the tests state it.
type providerEstimate struct {
	RTT        time.Duration // the peak EWMA, faded to now
	Known      bool          // false: no sample, RTT meaningless
	Inflight   int64
	ErrorRatio float64       // faded share of failed recent calls
	ErrorCost  time.Duration // what an error is charged at least
}

func (e providerEstimate) charged() float64 {
	return charged(float64(e.RTT), e.ErrorRatio, float64(e.ErrorCost))
}

// pairCosts is the balancer's rule on two estimates: their costs.
func pairCosts(a, b providerEstimate, defaultRTT time.Duration) (ca, cb float64) {
	ra, rb := rtts(a.charged(), float64(a.RTT), a.Known, b.charged(), float64(b.RTT), b.Known, defaultRTT)
	return ra * inflightFactor(a.Inflight), rb * inflightFactor(b.Inflight)
}

// estimate is what the statistics say about provider i of v at now.
func (b *Balancer) estimate(v *member.View[table], i int, now int64) providerEstimate {
	p := &v.Table.providers[i]
	st := p.stats
	rtt, known := st.EWMA().Value(now)
	e := providerEstimate{RTT: rtt, Known: known, Inflight: st.Active(), ErrorCost: p.errCost}
	if known {
		e.ErrorRatio = b.errorRatio(&p.err, st, now)
	}
	return e
}
