// Package nacosconf reads the settings of this module's Nacos clients from
// the registry URL: how a failed registration is retried (Retry, Dubbo
// Java's nacos.retry keys), TLS to Nacos (TLS, this module's nacos.tls.*
// keys), and the zone a Nacos instance's cluster names (Zone). Each reader
// checks its values: a bad one is a problem reported with its default, or
// for TLS an error, never a panic.
package nacosconf
