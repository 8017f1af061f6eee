package nacosdiscovery

import (
	"errors"
	"fmt"

	"dubbo.apache.org/dubbo-go/v3/common"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
)

// Reader reads the instances of services straight from a Nacos server, as
// a resync does (the v1 Open API, with the registry's namespace and login),
// for other packages of this module (the registration keeper).
type Reader struct{ api *openAPI }

// NewReader returns a Reader of the Nacos server of regURL, a registry URL
// with the keys dubbo-go's GetNacosConfig reads (the URL of a dubbo-go
// Nacos registry, registry.Registry.GetURL, has them) and the module's
// nacos.tls.* keys (nacosconf.TLS).
func NewReader(regURL *common.URL) (*Reader, error) {
	if regURL == nil {
		return nil, errors.New("no registry URL")
	}
	servers, config, tc, err := nacosConfig(regURL)
	if err != nil {
		return nil, fmt.Errorf("Nacos registry %s: %w", regURL.Location, err)
	}
	return &Reader{api: newOpenAPI(servers, config, tc)}, nil
}

// Instances returns every instance of service in group (healthy or not,
// enabled or not) that the server holds now, or an error when no server
// answered.
func (r *Reader) Instances(service, group string) ([]model.Instance, error) {
	return r.api.instances(service, group)
}
