// Package shortestresponse is Dubbo Java's ShortestResponseLoadBalance
// (3.3.6) under its name, "shortestresponse", so that a Java provider that
// names it works in a Go consumer: each pick goes to the provider with the
// shortest estimated response, the mean elapsed time of its successful
// calls in the current slide window times its calls in flight + 1; ties
// are drawn in proportion to warm weight. The window is
// shortestresponse.slidePeriod long (default 30 s, as Java's). The calls are counted by
// the lbactive filter, as Java's by its RpcStatus.
//
// It departs from Java where Java misleads (reasons and figures in
// DESIGN.md beside this file): the mean is of the provider's newest
// completions (those of the last second, at least 16) when 16 of them
// succeeded, so that a consumer that sees few calls follows a change
// within about a second, and of the slide window otherwise; a provider
// without a successful call in the window is estimated with the smallest mean known in the window, or its
// own previous window's mean if that is smaller, or when no provider has
// a mean yet (Java estimates it 0, so that one provider, or every provider
// just after each window reset, draws all the calls until one of its calls
// succeeds): it is probed once per window like Java's, never flooded;
// means are read from a table computed at most every Options.Refresh
// (default 10 ms), not from the counters on every pick, and kept sorted,
// so that a pick stops reading at the first provider whose mean alone
// exceeds the shortest estimate found (the same pick as Java's full
// scan); means are in nanoseconds, not whole milliseconds. Select
// allocates nothing and takes no lock.
package shortestresponse
