package nacosconf

import "strings"

// DefaultCluster is the cluster name of a Nacos instance registered
// without one: no zone.
const DefaultCluster = "DEFAULT"

// Zone returns the zone of a provider whose own zone parameter
// (urlparam.ZoneKey) is param (empty when it sets none) and whose Nacos
// instance is in cluster: the parameter when set, else the cluster unless
// it is Nacos's default, else "" (no zone).
func Zone(param, cluster string) string {
	if param = strings.TrimSpace(param); param != "" {
		return param
	}
	if cluster = strings.TrimSpace(cluster); cluster != DefaultCluster {
		return cluster
	}
	return ""
}
