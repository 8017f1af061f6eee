// Package app is what the sample provider and consumer share beyond the
// service itself: the dubbo-go plugins they link (instead of the whole of
// dubbo-go's imports package), the module's balancers and filter, and the
// loading of a dubbo-go YAML file into a dubbo-go Instance.
//
// The samples build an Instance (dubbo.NewInstance) from the YAML rather
// than call dubbo.Load, for two reasons: a provider's weight must be set in
// code (dubbo-go ignores YAML dubbo.provider.weight and exports weight=0
// without it), and a consumer must validate its balancer name before the
// first call. The YAML is read exactly as dubbo.Load reads it (same keys,
// same ${key:default} placeholders).
package app

import (
	"errors"
	"fmt"
	"os"

	"dubbo.apache.org/dubbo-go/v3"
	"github.com/knadh/koanf"

	// The dubbo-go plugins the samples use: triple over a Nacos registry
	// (or direct URLs), the failover cluster, dubbo-go's default provider
	// and consumer filters, its metrics filter and Prometheus exporter.
	_ "dubbo.apache.org/dubbo-go/v3/cluster/cluster/failfast"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/cluster/failover"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/cluster/zoneaware"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/roundrobin"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/router/condition"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/router/tag"
	_ "dubbo.apache.org/dubbo-go/v3/filter/accesslog"
	_ "dubbo.apache.org/dubbo-go/v3/filter/echo"
	_ "dubbo.apache.org/dubbo-go/v3/filter/exec_limit"
	_ "dubbo.apache.org/dubbo-go/v3/filter/generic"
	_ "dubbo.apache.org/dubbo-go/v3/filter/graceful_shutdown"
	_ "dubbo.apache.org/dubbo-go/v3/filter/metrics"
	_ "dubbo.apache.org/dubbo-go/v3/filter/token"
	_ "dubbo.apache.org/dubbo-go/v3/filter/tps"
	_ "dubbo.apache.org/dubbo-go/v3/filter/tps/limiter"
	_ "dubbo.apache.org/dubbo-go/v3/filter/tps/strategy"
	_ "dubbo.apache.org/dubbo-go/v3/metadata/mapping/metadata"
	_ "dubbo.apache.org/dubbo-go/v3/metadata/report/nacos"
	_ "dubbo.apache.org/dubbo-go/v3/metrics/prometheus"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/triple"
	_ "dubbo.apache.org/dubbo-go/v3/proxy/proxy_factory"
	_ "dubbo.apache.org/dubbo-go/v3/registry/directory"
	_ "dubbo.apache.org/dubbo-go/v3/registry/nacos"
	_ "dubbo.apache.org/dubbo-go/v3/registry/protocol"
	_ "dubbo.apache.org/dubbo-go/v3/registry/servicediscovery"

	// The module's balancers and its lbactive filter.
	_ "github.com/dubbogo-lb/lb/extension"
)

// ReadConfig reads the dubbo-go YAML file at path as dubbo.Load would,
// resolving ${key:default} placeholders. It returns an error, not a panic,
// for a missing or malformed file.
func ReadConfig(path string) (k *koanf.Koanf, err error) {
	if path == "" {
		return nil, errors.New("no configuration file given")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	defer func() {
		// dubbo-go's loader panics on unreadable or malformed files.
		if r := recover(); r != nil {
			k, err = nil, fmt.Errorf("configuration %s: %v", path, r)
		}
	}()
	return dubbo.GetConfigResolver(dubbo.NewLoaderConf(dubbo.WithPath(path))), nil
}

// NewInstance returns a dubbo-go Instance configured by the YAML k (from
// ReadConfig), after edit, if not nil, has adjusted the options.
func NewInstance(k *koanf.Koanf, edit func(*dubbo.InstanceOptions) error) (*dubbo.Instance, error) {
	var cfgErr error
	ins, err := dubbo.NewInstance(func(o *dubbo.InstanceOptions) {
		if k != nil {
			if cfgErr = k.UnmarshalWithConf(o.Prefix(), o, koanf.UnmarshalConf{Tag: "yaml"}); cfgErr != nil {
				return
			}
		}
		if edit != nil {
			cfgErr = edit(o)
		}
	})
	if cfgErr != nil {
		return nil, cfgErr
	}
	return ins, err
}
