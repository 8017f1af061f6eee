// Package sim is a discrete-event load-balancing simulator. It runs real
// balancers — any registered with dubbo-go, this module's own built with a
// virtual clock — through the real lbactive filter (package filter) and the
// real statistics store (package rpcstatus), against in-process fake
// providers with scripted latency and a limited number of calls served at
// once, driven by a closed loop of callers.
//
// # Virtual time
//
// Sleeping for real on a shared machine makes latencies noisy and runs
// slow, so the simulation keeps its own clock and jumps it from one event
// to the next. The difficulty is that the filter's Invoke brackets the
// provider's Invoke synchronously: it reads the clock, calls the provider
// and reads the clock again when the provider returns. A provider must
// therefore "take virtual time" inside Invoke.
//
// Each caller is a goroutine, but only one of them runs at any moment. A
// caller runs Select, then the filter's Invoke; the fake provider works out
// when the call completes (queueing behind the calls it already serves),
// puts a wake-up event at that time into a priority queue, hands control
// back to the scheduler and blocks. The scheduler pops the earliest event,
// advances the clock to it and wakes that one caller, which returns through
// the filter (recording the call's end at the new time), records the
// outcome, selects again and blocks in its next call. Scenario actions (a
// provider slows down, joins the list) are events in the same queue.
//
// Because exactly one goroutine runs at a time and hands over through
// channels, nothing races, events at the same instant run in the order
// they were scheduled, and the simulator's own randomness (latency jitter,
// injected errors) comes from one seeded source. A run is deterministic
// for a seed except for the balancers' own random draws, which use the
// process-wide generator; the figures then vary only as much as the
// balancer's randomness makes them.
//
// # Clocks
//
// The filter gets the virtual monotonic clock (filter.Options.Now) and the
// balancers of this module get it too, with a virtual wall clock for warmup
// (warmup.Options.Now), through the Factory table in balancers.go. dubbo-go's
// built-in balancers read time.Now only for their warmup, which in dubbo-go
// v3.3 never applies to registry-discovered providers, so they run
// unchanged. For dubbo-go's leastactive, whose counts only dubbo-go's own
// active filter feeds, the fake providers update dubbo-go's counters too,
// as if that filter were configured.
package sim
