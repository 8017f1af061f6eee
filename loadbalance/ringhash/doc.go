// Package ringhash is the ringhash balancer: consistent hashing whose ring is
// byte-for-byte Apache Dubbo's ConsistentHashLoadBalance (160 virtual nodes
// by default, md5 points, the key made of the Java string forms of the
// arguments hash.arguments lists), so Java and Go consumers send a key to
// the same provider; the vectors in testdata/ come from the Dubbo jar.
//
// The ring is rebuilt only when the provider addresses or hash.nodes change;
// an unavailable provider is skipped clockwise; bad hash.nodes or
// hash.arguments are replaced by safe values with one WARN line; bounded
// load (Options.BalanceFactor) is optional.
//
// The name stays apart from dubbo-go's own "consistenthashing". Reasoning
// and figures: DESIGN.md beside this file.
package ringhash
