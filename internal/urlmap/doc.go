// Package urlmap holds the module's maps of per-provider state: Store, keyed
// by identity (a provider's *common.URL) through weak pointers, so that a
// provider's entry goes when dubbo-go drops its URL; and Names, keyed by
// name (a method, a service: strings from outside the process), with a cap
// on the names it keeps and the release of names not used for a while.
// Reads take no lock and allocate nothing.
//
// rpcstatus keeps its statistics in them, and the balancers' snapshots
// (loadbalance/internal/member) are found through them.
package urlmap
