// Package chash is the pure core of a consistent-hash load balancer whose
// ring is byte-for-byte compatible with Apache Dubbo (Java)
// ConsistentHashLoadBalance, so Java and Go consumers send a given key to the
// same provider.
//
// # The ring
//
// For every member (provider) with address "ip:port" and for i in
// [0, nodes/4), the ring holds the four little-endian 32-bit words of
// md5(address + decimal(i)) as points owned by that member; nodes defaults to
// 160 (Dubbo's URL parameter "hash.nodes"). A key is hashed to the
// little-endian 32-bit word made of the first four bytes of md5(key), and
// belongs to the first ring point at or after that value, wrapping to the
// first point of the ring. When two members produce the same point, the member
// that comes later in the slice given to [Build] owns it, exactly as the later
// TreeMap.put wins in Dubbo.
//
// The ring is an immutable, flat, sorted array searched in O(log n) with no
// allocation; build a new [Ring] when membership changes and share it between
// goroutines freely.
//
// # Keys
//
// Dubbo's key is the concatenation of String.valueOf(arg) for the argument
// indexes listed in "hash.arguments" (default "0"). This package works on the
// string forms: [ParseArguments] parses the index list, [AppendKey] builds the
// key into a caller-provided buffer, and [HashKey] / [HashString] turn it into
// a key point. [AppendJava] turns a Go value into the string form Java's
// String.valueOf gives the corresponding Java value.
// Java hashes String.getBytes() in the JVM's default charset; keys agree for
// non-ASCII text when that charset is UTF-8 (always so since JDK 18).
//
// # Beyond Dubbo
//
// [Ring.LookupFunc] walks clockwise past members the caller rejects (for
// example unavailable providers), visiting each member at most once, and
// [Ring.LookupBounded] adds optional bounded load in the style of Envoy's
// hash_balance_factor: the first member clockwise whose in-flight load stays
// within factor × the average is chosen. Neither changes the choice when every
// member is acceptable and under its bound, so plain Dubbo compatibility is
// kept in the normal case.
//
// # The dubbo-go balancer
//
// [Balancer] (registered as [Name], "ringhash") is the dubbo-go load
// balancer built on this core: it keeps one ring per (service, method) in
// the shared membership snapshots of package member, rebuilt only when the
// provider addresses or hash.nodes change, reads hash.nodes and
// hash.arguments once per snapshot, and selects without allocating. See
// [Balancer] for how it treats unavailable providers, failover retries,
// bad configuration and the optional bounded load.
package chash
