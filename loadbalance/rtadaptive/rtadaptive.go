package rtadaptive

import (
	"math"
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "rtadaptive"

// Options configure a Balancer. The zero value is ready to use; negative
// durations count as 0, which means the default.
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
	// DefaultRTT is the response time charged to a provider without any
	// sample. Default 0: it borrows the estimate of the provider it is
	// compared with.
	DefaultRTT time.Duration
	// ErrorCost is the response time an error is charged at least. Default:
	// the method's timeout from the provider URL (methods.<m>.timeout,
	// <m>.timeout, timeout), else 3 s, dubbo-go's default. Lower it when
	// providers return business errors that are not the provider's fault.
	ErrorCost time.Duration
	// ErrorDecay is the time constant with which the error charge fades
	// after a provider's last error; default rpcstatus.EWMADecay (10 s).
	ErrorDecay time.Duration
}

// Balancer is the RT-adaptive balancer. It is safe for concurrent use; one
// Balancer serves every service and method.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk           *skeleton.Balancer[table]
	rand         algo.Rand
	two          skeleton.TwoChoices[table] // the pick: the cheaper of two candidates
	now          func() int64
	defaultRTT   time.Duration
	errorCost    time.Duration
	errorDecay   float64 // ns
	errorHorizon int64   // ns after which an error charge is forgotten (e^-20 left)
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{
		now:        opts.Env.Now,
		defaultRTT: max(opts.DefaultRTT, 0),
		errorCost:  max(opts.ErrorCost, 0),
		errorDecay: float64(opts.ErrorDecay),
		rand:       algo.Source(opts.Env.Rand),
	}
	if opts.ErrorDecay <= 0 {
		b.errorDecay = float64(rpcstatus.EWMADecay)
	}
	b.errorHorizon = int64(min(20*b.errorDecay, math.MaxInt64/2))
	spec := skeleton.Spec[table]{Name: Name, Warmup: opts.Warmup, Env: opts.Env, Build: b.build, Describe: b.describe}
	b.two = skeleton.TwoChoices[table]{Rand: b.rand, Alias: func(v *member.View[table]) *algo.Alias { return v.Table.alias }, Better: b.better,
		Window: int64(skeleton.FailureWindow), Now: b.now}
	spec.Pick, spec.Among = b.two.Pick, b.two.Among
	spec.Uncounted = "response times are unknown, so the balancer picks at random"
	b.sk = skeleton.New(spec)
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// better reports whether provider i of v is the better choice against j:
// the cheaper, charged RTT × (calls in flight + 1) (see rtts), or on a tie
// a coin flip.
func (b *Balancer) better(v *member.View[table], i, j int) bool {
	var ci, pi, cj, pj float64
	var ki, kj bool
	candI, candJ := &v.Table.providers[i], &v.Table.providers[j]
	si, sj := candI.stats, candJ.stats
	if clean(candI) && clean(candJ) {
		// No error to charge: RTTs as of the later of the two last
		// samples order the providers as of now, without the clock.
		pi, pj, ki, kj = rpcstatus.Pair(si.EWMA(), sj.EWMA())
		ci, cj = charged(pi, 0, 0), charged(pj, 0, 0)
	} else {
		now := b.now()
		ci, pi, ki = b.rtt(candI, now)
		cj, pj, kj = b.rtt(candJ, now)
	}
	ri, rj := rtts(ci, pi, ki, cj, pj, kj, b.defaultRTT)
	ri *= inflightFactor(si.Active())
	rj *= inflightFactor(sj.Active())
	if ri != rj {
		return ri < rj
	}
	return b.rand.Uint64()&1 == 0
}

// rtt returns p's charged and plain response time at now, and whether it
// has samples.
func (b *Balancer) rtt(p *provider, now int64) (chargedRTT, plain float64, known bool) {
	st := p.stats
	d, known := st.EWMA().Value(now)
	if !known {
		return 0, 0, false
	}
	plain = float64(d)
	return charged(plain, b.errorRatio(&p.err, st, now), float64(p.errCost)), plain, true
}

// describe gives each provider of v its cost as a pick weighs it, charged
// RTT × (calls in flight + 1), or 0 while it has no sample and no
// DefaultRTT.
func (b *Balancer) describe(v *member.View[table], _ int64, ps []describe.Provider) {
	now := b.now() // the clock of the error charges
	for i := range ps {
		p := &v.Table.providers[i]
		rtt, _, known := b.rtt(p, now)
		if !known {
			if b.defaultRTT <= 0 {
				continue
			}
			rtt = max(float64(b.defaultRTT), minRTT)
		}
		ps[i].CostMs = rtt * inflightFactor(p.stats.Active()) / 1e6
	}
}

// clean reports whether p has no error to charge.
func clean(p *provider) bool {
	return p.err.at.Load() == 0 && p.stats.Failed() == p.err.failed.Load()
}

// errorRatio returns the share of failed calls in the provider's window,
// faded by the time since its failure count last grew (a punished
// provider's window would keep its errors for ever), 0 after an outlier
// ejection it has not failed since.
func (b *Balancer) errorRatio(es *errState, st *rpcstatus.Stats, now int64) float64 {
	at := es.at.Load()
	if st.CleanSinceReturn() {
		es.failed.Store(st.Failed())
		es.at.Store(0)
		return 0
	}
	if f := st.Failed(); f != es.failed.Load() {
		// Racing callers may both store: the times differ by a pick.
		es.failed.Store(f)
		at = max(now, 1)
		es.at.Store(at)
	}
	if at == 0 {
		return 0
	}
	if now-at > b.errorHorizon {
		es.at.CompareAndSwap(at, 0) // forgotten: the provider is clean again
		return 0
	}
	sum := st.Window().Summary()
	if sum.Errors <= 0 || sum.Samples <= 0 {
		return 0
	}
	return float64(sum.Errors) / float64(sum.Samples) * fade(float64(now-at), b.errorDecay)
}
