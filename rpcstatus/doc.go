// Package rpcstatus keeps call statistics per provider and per (provider,
// method): calls in flight, totals, failures, elapsed times, a window of
// recent completions, a peak-sensitive moving average of latency, and for
// observability the picks of the balancers and a latency histogram.
//
// It also keeps, per (provider, method), the run of consecutive failures
// that outlier detection counts, and the Board through which the filter
// raises the detection's alarm (outlier.go).
//
// It is the one statistics store of the module. The active filter (package
// filter) writes it on every call; the balancers read it and count their
// picks in it. Every counter is a
// 64-bit atomic, so recording a call and reading a provider's figures take no
// lock and allocate nothing.
//
// Times are monotonic nanoseconds from Nanotime (or an injected clock with
// the same meaning); the store never reads the clock itself, which keeps it
// deterministic in tests.
package rpcstatus
