package nacosdiscovery

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sync"

	gxset "github.com/dubbogo/gost/container/set"
	gxpage "github.com/dubbogo/gost/hash/page"
	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/metadata/info"
	"dubbo.apache.org/dubbo-go/v3/registry"
	dgnacos "dubbo.apache.org/dubbo-go/v3/remoting/nacos"

	"github.com/dubbogo-lb/lb/extension/internal/lbname"
	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
	"github.com/dubbogo-lb/lb/extension/internal/nacosweight"
	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// NewServiceDiscovery returns the creator of the Nacos service discovery
// for dubbo-go's extension.SetServiceDiscovery: application-level
// (registry-type: service, or all) consumers and providers of Nacos go
// through it instead of dubbo-go's.
//
// As a consumer it follows each application through the feeds of this
// package (subscribed before read, one per application, resynced with the
// Open API), tells dubbo-go's listener of the enabled, healthy instances
// only, and its instances build provider URLs that keep the provider's own
// weight parameter and carry the factor of the Nacos instance weight
// (nacosweight). As a provider it registers as dubbo-go v3.3.2 does
// (register.go).
func NewServiceDiscovery(o Options) func(*common.URL) (registry.ServiceDiscovery, error) {
	return func(url *common.URL) (registry.ServiceDiscovery, error) {
		return newAppDiscovery(url, o), nil
	}
}

// appDiscovery is the registry.ServiceDiscovery of one registry.
type appDiscovery struct {
	regURL     *common.URL // the registry's URL, as dubbo-go hands it
	clientURL  *common.URL // the URL the Nacos clients are configured from
	group      string
	opts       Options
	descriptor string

	mu   sync.Mutex
	src  *source // made on first use by a consumer
	subs map[registry.ServiceInstancesChangedListener]map[string]*subscription

	registration // the provider side (register.go)
}

func newAppDiscovery(url *common.URL, o Options) *appDiscovery {
	// The client's URL as dubbo-go's newNacosServiceDiscovery builds it.
	clientURL := common.NewURLWithOptions(
		common.WithParams(url.GetParams()),
		common.WithParamsValue(constant.TimeoutKey, url.GetParam(constant.RegistryTimeoutKey, constant.DefaultRegTimeout)),
		common.WithParamsValue(constant.NacosGroupKey, url.GetParam(constant.RegistryGroupKey, defaultGroup)),
		common.WithParamsValue(constant.NacosUsername, url.Username),
		common.WithParamsValue(constant.NacosPassword, url.Password),
		common.WithParamsValue(constant.NacosNamespaceID, url.GetParam(constant.RegistryNamespaceKey, "")))
	clientURL.Location = url.Location
	clientURL.Username = url.Username
	clientURL.Password = url.Password
	d := &appDiscovery{
		regURL:     url,
		clientURL:  clientURL,
		group:      url.GetParam(constant.RegistryGroupKey, defaultGroup),
		opts:       o.withDefaults(),
		descriptor: fmt.Sprintf("nacos-service-discovery[%s] (github.com/dubbogo-lb/lb)", url.Location),
		subs:       map[registry.ServiceInstancesChangedListener]map[string]*subscription{},
	}
	newClient := o.NamingClient
	if newClient == nil {
		newClient = pooledNamingClient
	}
	d.registration.init(url, clientURL, func() (naming_client.INamingClient, error) { return newClient(clientURL) }, d.group, o.Registrations)
	return d
}

// pooledNamingClient is dubbo-go's Nacos client of clientURL, from its pool.
func pooledNamingClient(clientURL *common.URL) (naming_client.INamingClient, error) {
	c, err := dgnacos.NewNacosClientByURL(clientURL)
	if err != nil {
		return nil, err
	}
	return c.Client(), nil
}

func (d *appDiscovery) String() string { return d.descriptor }

// source returns the consumer side's Nacos client, made on first use.
func (d *appDiscovery) source() (*source, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.src != nil {
		return d.src, nil
	}
	src, err := acquire(d.clientURL)
	if err != nil {
		return nil, err
	}
	d.src = src
	return src, nil
}

// GetInstances returns the enabled, healthy instances of the application
// serviceName: the feed's list when the application is followed already,
// else the server's answer through the Open API (never the Nacos client's
// cache). Nothing depends on it being complete: a listener added later
// (AddListener) is told the feed's list as soon as it is subscribed.
func (d *appDiscovery) GetInstances(serviceName string) []registry.ServiceInstance {
	src, err := d.source()
	if err != nil {
		lblog.Warnf("nacos discovery: no Nacos client for %s: %v", d.regURL.Location, err)
		return []registry.ServiceInstance{}
	}
	list, err := src.read(serviceName, d.group)
	if err != nil {
		lblog.Warnf("nacos discovery: reading application %s in group %s: %v; the subscription will bring its instances", serviceName, d.group, err)
		return []registry.ServiceInstance{}
	}
	return appInstances(serviceName, d.group, list)
}

// AddListener follows every application of listener: each is subscribed
// (retrying until it succeeds or the discovery is destroyed), then the
// listener is told its enabled, healthy instances at once and after every
// change that a push or a resync brings.
func (d *appDiscovery) AddListener(listener registry.ServiceInstancesChangedListener) error {
	src, err := d.source()
	if err != nil {
		return err
	}
	var added []*subscription
	d.mu.Lock()
	byService := d.subs[listener]
	if byService == nil {
		byService = map[string]*subscription{}
		d.subs[listener] = byService
	}
	for _, v := range listener.GetServiceNames().Values() {
		service, ok := v.(string)
		if !ok || service == "" || byService[service] != nil {
			continue
		}
		src.hold()
		sub := &subscription{src: src, opts: d.opts, wake: make(chan struct{}, 1), done: make(chan struct{})}
		sub.deliver = instancesTeller(listener, service, d.group)
		sub.feed = src.watch(service, d.group, sub, d.opts)
		byService[service] = sub
		added = append(added, sub)
	}
	d.mu.Unlock()
	for _, sub := range added {
		sub.subscribe()
	}
	return nil
}

// instancesTeller returns what tells listener of the enabled, healthy
// instances of service in a list, unless they are the same news as the
// last list it told.
func instancesTeller(listener registry.ServiceInstancesChangedListener, service, group string) func([]model.Instance) {
	var last []model.Instance // guarded by the subscription's mu, which apply holds
	return func(list []model.Instance) {
		if last != nil && sameUsable(last, list) {
			return
		}
		last = list
		event := registry.NewServiceInstancesChangedEvent(service, appInstances(service, group, list))
		if err := listener.OnEvent(event); err != nil {
			lblog.Warnf("nacos discovery: application %s in group %s: the listener failed: %v", service, group, err)
		}
	}
}

// Destroy ends every subscription, unregisters what was registered, and
// closes the Nacos clients.
func (d *appDiscovery) Destroy() error {
	d.mu.Lock()
	subs := d.subs
	d.subs = map[registry.ServiceInstancesChangedListener]map[string]*subscription{}
	src := d.src
	d.src = nil
	d.mu.Unlock()
	for _, byService := range subs {
		for _, sub := range byService {
			_ = sub.close()
		}
	}
	if src != nil {
		src.release()
	}
	return d.registration.destroy()
}

// GetDefaultPageSize is registry.DefaultPageSize.
func (d *appDiscovery) GetDefaultPageSize() int { return registry.DefaultPageSize }

// interfaceService matches the Nacos services of interface-level
// registration, which are not applications.
var interfaceService = regexp.MustCompile(`^providers:[\w.]+(?::[\w.]*:|::[\w.]*)?$`)

// GetServices returns the applications of the registry's group.
func (d *appDiscovery) GetServices() *gxset.HashSet {
	res := gxset.NewSet()
	src, err := d.source()
	if err != nil {
		lblog.Warnf("nacos discovery: no Nacos client for %s: %v", d.regURL.Location, err)
		return res
	}
	for page := uint32(1); ; page++ {
		list, err := src.sdk.GetAllServicesInfo(vo.GetAllServiceInfoParam{PageNo: page, PageSize: uint32(d.GetDefaultPageSize()), GroupName: d.group})
		if err != nil {
			lblog.Warnf("nacos discovery: listing the services of group %s: %v", d.group, err)
			return res
		}
		for _, name := range list.Doms {
			if !interfaceService.MatchString(name) {
				res.Add(name)
			}
		}
		if int(list.Count) < d.GetDefaultPageSize() || len(list.Doms) == 0 {
			return res
		}
	}
}

// GetInstancesByPage pages GetInstances.
func (d *appDiscovery) GetInstancesByPage(serviceName string, offset, pageSize int) gxpage.Pager {
	return page(d.GetInstances(serviceName), offset, pageSize, func(registry.ServiceInstance) bool { return true })
}

// GetHealthyInstancesByPage pages the instances of GetInstances whose
// health is healthy (GetInstances returns healthy ones only).
func (d *appDiscovery) GetHealthyInstancesByPage(serviceName string, offset, pageSize int, healthy bool) gxpage.Pager {
	return page(d.GetInstances(serviceName), offset, pageSize, func(in registry.ServiceInstance) bool { return in.IsHealthy() == healthy })
}

// GetRequestInstances pages GetInstances of each of serviceNames.
func (d *appDiscovery) GetRequestInstances(serviceNames []string, offset, requestedSize int) map[string]gxpage.Pager {
	res := make(map[string]gxpage.Pager, len(serviceNames))
	for _, name := range serviceNames {
		res[name] = d.GetInstancesByPage(name, offset, requestedSize)
	}
	return res
}

func page(all []registry.ServiceInstance, offset, size int, keep func(registry.ServiceInstance) bool) gxpage.Pager {
	offset, size = max(offset, 0), max(size, 0)
	out := make([]any, 0, min(size, len(all)))
	skip := offset
	for _, in := range all {
		if len(out) == size {
			break
		}
		if keep(in) {
			if skip > 0 {
				skip--
				continue
			}
			out = append(out, in)
		}
	}
	return gxpage.NewPage(offset, size, out, len(all))
}

// appInstances returns the enabled, healthy instances of list as service
// instances of the application service, in address order.
func appInstances(service, group string, list []model.Instance) []registry.ServiceInstance {
	usable := slices.SortedFunc(maps.Values(usableByHost(list)), func(a, b model.Instance) int {
		return cmp.Or(cmp.Compare(a.Ip, b.Ip), cmp.Compare(a.Port, b.Port))
	})
	out := make([]registry.ServiceInstance, 0, len(usable))
	for _, in := range usable {
		out = append(out, newAppInstance(service, group, in))
	}
	return out
}

// appInstance is a provider instance found at application level. Its
// provider URLs keep the provider's own weight parameter, where dubbo-go's
// write the rounded Nacos instance weight over it (0 becoming 100), and
// carry the factor of the exact Nacos instance weight.
type appInstance struct {
	*registry.DefaultServiceInstance
	nacosWeight float64
	cluster     string // the instance's Nacos cluster name: its zone
}

// newAppInstance is in as dubbo-go's Nacos discovery makes it: the id
// from the metadata's "id" entry, which the instance's metadata loses.
func newAppInstance(service, group string, in model.Instance) *appInstance {
	md := maps.Clone(in.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	id := md[idKey]
	delete(md, idKey)
	return &appInstance{
		DefaultServiceInstance: &registry.DefaultServiceInstance{
			ID:          id,
			ServiceName: service,
			Host:        in.Ip,
			Port:        int(in.Port),
			Weight:      int64(math.Round(in.Weight)),
			Enable:      in.Enable,
			Healthy:     in.Healthy,
			Metadata:    md,
			GroupName:   group,
			Tag:         md[constant.Tagkey],
		},
		nacosWeight: in.Weight,
		cluster:     in.ClusterName,
	}
}

// ToURLs returns the provider URLs of service on this instance, as
// dubbo-go builds them but for the weight: the provider's own weight
// parameter (none if it has none), and the weight factor parameter; and
// for the timestamp: the service's, else the instance's (see
// instanceTimestamp); the zone (urlparam.ZoneKey): the service's
// parameter, else the instance's metadata entry, else its cluster name;
// and each balancer named in Dubbo Java's method-level spelling in
// dubbo-go's too (lbname.JavaMethodSpelling).
func (a *appInstance) ToURLs(service *info.ServiceInfo) []*common.URL {
	urls := a.DefaultServiceInstance.ToURLs(service)
	own := service.Params[constant.WeightKey]
	ts := instanceTimestamp(service, a.Metadata)
	zone := nacosconf.Zone(cmp.Or(service.Params[urlparam.ZoneKey], a.Metadata[urlparam.ZoneKey]), a.cluster)
	factor := nacosweight.Format(nacosweight.Factor(nacosweight.Instance{
		Weight: a.nacosWeight, Level: nacosweight.Application, Release: service.Params[constant.ReleaseKey],
	}))
	for _, u := range urls {
		if own != "" {
			u.SetParam(constant.WeightKey, own)
		} else {
			u.DelParam(constant.WeightKey)
		}
		u.SetParam(urlparam.WeightFactorKey, factor)
		if ts != "" {
			u.SetParam(constant.TimestampKey, ts)
		}
		if zone != "" {
			u.SetParam(urlparam.ZoneKey, zone)
		}
		lbname.JavaMethodSpelling(u)
	}
	return urls
}

// instanceTimestamp returns the timestamp a provider URL of service on an
// instance with metadata md lacks: "" when the service's parameters have
// one (dubbo-go's providers), else the instance's. Dubbo Java keeps the
// timestamp (Unix ms, taken at export) in the instance's metadata only, not
// in the service's parameters that its metadata service or report hands
// out, and its consumers read a parameter from the service first, then from
// the instance (InstanceAddressURL.getServiceParameter, 3.3.6). Without
// this, dubbo-go's merge with the reference (URL.MergeURL) fills the
// missing timestamp with the consumer's own, in seconds: a Java provider
// would warm up from the consumer's start over its warmup read as seconds
// (Dubbo's default 600000 ms as almost 7 days).
func instanceTimestamp(service *info.ServiceInfo, md map[string]string) string {
	if service.Params[constant.TimestampKey] != "" {
		return ""
	}
	return md[constant.TimestampKey]
}

// Copy returns the instance at another endpoint.
func (a *appInstance) Copy(endpoint *registry.Endpoint) registry.ServiceInstance {
	c := a.DefaultServiceInstance.Copy(endpoint).(*registry.DefaultServiceInstance)
	c.Weight = a.Weight
	return &appInstance{DefaultServiceInstance: c, nacosWeight: a.nacosWeight, cluster: a.cluster}
}

// idKey is the metadata entry that carries a dubbo-go ServiceInstance's id
// (the Nacos client has no field for it).
const idKey = "id"
