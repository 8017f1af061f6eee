// Package lbenv is what every balancer of the module reads besides its
// providers: two clocks and a random source. The zero Env is the real one;
// tests and simulators inject their own, one Env for every balancer and
// filter that share statistics.
package lbenv

import (
	"math/rand/v2"
	"time"

	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Env is a balancer's environment. Each field is optional.
type Env struct {
	Now  func() int64     // the statistics' monotonic clock (ns), the lbactive filter's; default rpcstatus.Nanotime
	Wall func() time.Time // the wall clock of providers' uptimes (package warmup); default time.Now
	Rand func() uint64    // uniformly random words, safe for concurrent use; default math/rand/v2's Uint64
}

// WithDefaults returns e with its unset fields set to their defaults.
func (e Env) WithDefaults() Env {
	if e.Now == nil {
		e.Now = rpcstatus.Nanotime
	}
	if e.Wall == nil {
		e.Wall = time.Now
	}
	if e.Rand == nil {
		e.Rand = rand.Uint64
	}
	return e
}
