// Package balancers is the one list of the module's balancers: the names
// package extension registers with dubbo-go, and how to build each on an
// environment (clocks and random source). The conformance suite and the
// simulator (samples/lbsim) build from the same list, so a new balancer is
// added here once and is registered, checked and simulated.
package balancers

import (
	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/adaptive"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/loadaware"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
	"github.com/dubbogo-lb/lb/loadbalance/rtadaptive"
	"github.com/dubbogo-lb/lb/loadbalance/shortestresponse"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
)

// Balancer is what each balancer of the module is: a dubbo-go balancer
// that describes what it decides.
type Balancer interface {
	loadbalance.LoadBalance
	describe.Source
}

// Entry is one balancer of the module: the name it is registered under
// and how to build it in its default configuration on env (the zero Env is
// the real clocks and random source).
type Entry struct {
	Name string
	New  func(env lbenv.Env) Balancer
}

// All lists the module's balancers, each once, in their default
// configuration. Variants (other options, Dubbo Java's alias names) are
// their users' own.
var All = []Entry{
	{warmrandom.Name, func(e lbenv.Env) Balancer { return warmrandom.New(warmrandom.Options{Env: e}) }},
	{ringhash.Name, func(e lbenv.Env) Balancer { return ringhash.New(ringhash.Options{Env: e}) }},
	{shortestresponse.Name, func(e lbenv.Env) Balancer { return shortestresponse.New(shortestresponse.Options{Env: e}) }},
	{adaptive.Name, func(e lbenv.Env) Balancer { return adaptive.New(adaptive.Options{Env: e}) }},
	{fewestactive.Name, func(e lbenv.Env) Balancer { return fewestactive.New(fewestactive.Options{Env: e}) }},
	{swrr.Name, func(e lbenv.Env) Balancer { return swrr.New(swrr.Options{Env: e}) }},
	{lalb.Name, func(e lbenv.Env) Balancer { return lalb.New(lalb.Options{Env: e}) }},
	{rtadaptive.Name, func(e lbenv.Env) Balancer { return rtadaptive.New(rtadaptive.Options{Env: e}) }},
	{loadaware.Name, func(e lbenv.Env) Balancer { return loadaware.New(loadaware.Options{Env: e}) }},
}
