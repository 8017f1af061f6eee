// Package ringhash is the ringhash balancer: consistent hashing on Apache
// Dubbo's ConsistentHashLoadBalance ring (160 md5 points a provider, the key
// made of the Java string forms of the hash.arguments), so that Java and Go
// consumers send a key to the same provider; testdata/ holds vectors from
// the Dubbo jar. An unavailable provider is skipped clockwise; bounded load
// is optional (Options.BalanceFactor). Design notes: DESIGN.md.
package ringhash
