// Package sim is the scenarios and measurements of the load-balancing
// simulator (command lbsim): providers with scripted latency, a limited
// number of calls served at once, errors, joins and leaves; a closed loop
// of callers; per-bucket shares, throughput, mean and p99 latency, tables.
//
// It runs on the module's one simulator engine, package
// github.com/dubbogo-lb/lb/internal/assembly/simulate: real balancers (any
// registered with dubbo-go; this module's built on the virtual clocks,
// balancers.go) through the real lbactive filter and rpcstatus store, on a
// virtual clock. The simulator's randomness (jitter, injected errors) and
// this module's balancers' draws come from sources seeded by Options.Seed,
// so their runs are reproducible; dubbo-go's balancers draw from the
// process-wide generator. How virtual time passes through the filter:
// internal/assembly/simulate/DESIGN.md.
package sim
