package nacosdiscovery

import (
	"errors"
	"net/url"
	"strconv"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/model"

	"github.com/dubbogo-lb/lb/extension/internal/lbname"
	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
	"github.com/dubbogo-lb/lb/extension/internal/nacosweight"
	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// providerURL is the provider URL of an instance registered at interface
// level, as dubbo-go builds it (every metadata entry is a parameter, the
// path is the metadata's path, else /interface, the protocol the
// metadata's protocol), plus the weight factor of the instance's Nacos
// weight (urlparam.WeightFactorKey, see nacosweight), which dubbo-go
// ignores, the provider's zone (urlparam.ZoneKey: its own parameter,
// else the instance's cluster name), and each balancer named in Dubbo
// Java's method-level spelling in dubbo-go's too
// (lbname.JavaMethodSpelling).
func providerURL(in model.Instance) (*common.URL, error) {
	md := in.Metadata
	path, iface, protocol := md[constant.NacosPathKey], md[constant.InterfaceKey], md[constant.ProtocolKey]
	switch {
	case path == "" && iface == "":
		return nil, errors.New("metadata has neither path nor interface")
	case protocol == "":
		return nil, errors.New("metadata has no protocol")
	case path == "":
		path = "/" + iface
	}
	params := make(url.Values, len(md))
	for k, v := range md {
		params.Set(k, v)
	}
	params.Set(urlparam.WeightFactorKey, nacosweight.Format(nacosweight.Factor(nacosweight.Instance{
		Weight: in.Weight, Level: nacosweight.Interface,
		Release: md[constant.ReleaseKey], WeightParam: md[constant.WeightKey],
	})))
	if zone := nacosconf.Zone(md[urlparam.ZoneKey], in.ClusterName); zone != "" {
		params.Set(urlparam.ZoneKey, zone)
	}
	u := common.NewURLWithOptions(
		common.WithIp(in.Ip),
		common.WithPort(strconv.FormatUint(in.Port, 10)),
		common.WithProtocol(protocol),
		common.WithParams(params),
		common.WithPath(path),
	)
	lbname.JavaMethodSpelling(u)
	return u, nil
}
