// Package simulate is the module's one load-balancing simulator engine. It
// drives a real balancer through the real lbactive filter (package filter)
// and statistics store (package rpcstatus) against simulated providers, on
// a virtual clock that jumps from one event to the next: no sleeps, and a
// run does not depend on the machine's load.
//
// A Sim holds providers (a Server says when each call ends and whether it
// fails; a Model, the one server model of the module, makes one from a
// latency, its spread, workers and an error rate), the list offered to Select, closed-loop callers (Callers) or
// open-loop arrivals (Arrivals) and scheduled actions (At). Its randomness
// comes from one injectable source (Options.Rand); hooks report every
// pick and completion. samples/lbsim and the balancers' tests (through
// lbtest.Driver) both run on it.
//
// How virtual time passes through the filter's synchronous Invoke: see
// DESIGN.md in this folder.
package simulate
