// Package lalb is the pure core of a locality-aware load balancer (LALB), the
// algorithm of brpc's "la" policy: traffic goes to the providers that
// answer fastest for the throughput they get, and moves away from a provider
// as soon as its calls come back late or not at all. It has no dubbo-go
// types; the adapter in this package feeds it statistics and publishes its
// tree.
//
// # Weights
//
// Each provider's weight is its useful throughput divided by its latency
// ([Weight]):
//
//	QPS × Scale / latency^P
//
// computed from a window of recent completions. Because the throughput in
// the numerator follows the traffic the provider receives, a provider faster
// than the others gains weight at every update until its latency rises to
// theirs or it takes all the traffic: the split is not proportional to the
// latencies but settles where latencies meet (see brpc's docs/cn/lalb.md).
// The flip side, in brpc too: equally fast providers whose latency does not
// grow with their load have no preferred split, and their shares wander
// (the simulator's slowdown scenario shows it); providers that queue when
// busy settle at an even split.
// Errors lower both terms: only successes count as throughput, and each
// error adds a penalised latency (PunishErrorRatio, or the timeout) spread
// over the successes. Calls still in flight are watched too: if their mean
// age exceeds PunishInflightRatio × latency, the weight falls in proportion,
// so a provider that stopped answering loses traffic within a few latencies
// instead of a timeout.
//
// Every provider keeps a minimum share of the traffic ([Floor], from
// Tuning.MinShare), so a provider that failed or was slow is still probed
// and its recovery is seen. A provider with too few completions of its own
// counts as new and gets the average weight of the others
// ([NewProviderWeight]), which the adapter scales by its warmup factor;
// [TreeWeight] turns a weight into the integer stored in the tree.
//
// The functions read no clock: the caller passes the current time, which
// keeps them deterministic and testable.
//
// # Selection
//
// [Tree] picks a provider with probability proportional to its weight in
// O(log N): a complete binary tree in an array where each node holds its
// own weight and the sum of its left subtree. A weight change adds the
// difference along the path to the root with atomic adds, so feedback from
// many goroutines needs no lock and never blocks a pick; picks tolerate the
// brief inconsistency of a change half way up its path. Membership changes
// build a new tree ([Tree.Weights], [NewTree]).
//
// # Beyond brpc
//
//   - A new provider keeps the average weight until it has MinSamples
//     completions (brpc recomputes it from its first completion, with a
//     throughput of 1 call/s, and the weight collapses); the adapter adds an
//     explicit warmup.
//   - The probe floor is a share of the traffic (min(MinShare, 0.5/N)) rather
//     than a fixed integer, so its effect does not depend on the scale of
//     the weights.
//   - Removing providers rebuilds the tree, which works for any batch (brpc's
//     batch removal is marked as broken).
//   - The latency exponent P is an option (brpc's code uses 1, its doc 2);
//     see DefaultP for the choice.
package lalb
