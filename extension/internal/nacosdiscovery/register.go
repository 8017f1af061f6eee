package nacosdiscovery

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/clients/naming_client"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/registry"

	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// registration is the provider side of the application-level discovery:
// it registers instances as dubbo-go v3.3.2's Nacos service discovery
// does, through dubbo-go's own Nacos client (remoting/nacos), made on the
// first registration:
//
//   - the instances of one application are registered together
//     (BatchRegisterInstance), ephemeral, in the registry's group;
//   - the instance's id travels in the metadata entry "id";
//   - the instance weight is the registry's weight parameter
//     (registry.weight) when set, else the instance's weight, and 1.0 when
//     that is not positive: 1.0 unless configured (dubbo-go's registry
//     configuration always sets registry.weight, to 0 by default), above
//     10000 capped (registeredWeight);
//   - Update is Unregister then Register; an instance registered again
//     replaces the one of the same id (dubbo-go would list it twice);
//   - a registration that Nacos fails is tried again, as Dubbo Java's
//     Nacos registry does (nacos.retry, nacos.retry-wait; see
//     nacosconf.Retry); dubbo-go would fail at once.
//
// It lists what it registered, and has not withdrawn, in its
// Registrations (kept.go) for the registration keeper, which registers an
// application again through registerAgain.
type registration struct {
	regURL    *common.URL
	clientURL *common.URL // of the Nacos client, for the keeper's Reader
	group     string
	newClient func() (naming_client.INamingClient, error)
	kept      *Registrations      // nil: not recorded
	sleep     func(time.Duration) // between two tries of a registration

	mu        sync.Mutex
	client    naming_client.INamingClient
	byService map[string][]sentInstance // registered, by application
	destroyed bool                      // by destroy, until the next Register
	reader    *Reader                   // made on the keeper's first look
}

func (r *registration) init(regURL, clientURL *common.URL, newClient func() (naming_client.INamingClient, error), group string, kept *Registrations) {
	r.regURL, r.clientURL, r.newClient, r.group, r.kept = regURL, clientURL, newClient, group, kept
	r.sleep = time.Sleep
	r.byService = map[string][]sentInstance{}
}

// sentInstance is one instance as it was registered: the registration is
// built when dubbo-go hands the instance over, so that registering it
// again (registerAgain, or beside another instance of its application)
// never reads the instance's metadata map, which dubbo-go may be changing
// at that moment, outside our lock, for its next Update.
type sentInstance struct {
	id    string
	param vo.RegisterInstanceParam
}

// clientLocked returns the Nacos client, made on first use; r.mu held.
func (r *registration) clientLocked() (naming_client.INamingClient, error) {
	if r.client == nil {
		c, err := r.newClient()
		if err != nil {
			return nil, fmt.Errorf("create the Nacos client of %s: %w", r.regURL.Location, err)
		}
		r.client = c
	}
	return r.client, nil
}

// Register registers instance beside the other instances of its
// application that this process registered.
func (r *registration) Register(instance registry.ServiceInstance) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	client, err := r.clientLocked()
	if err != nil {
		return err
	}
	name := instance.GetServiceName()
	list := slices.DeleteFunc(slices.Clone(r.byService[name]), func(in sentInstance) bool {
		return in.id == instance.GetID()
	})
	list = append(list, sentInstance{id: instance.GetID(), param: r.registerParam(instance)})
	if err := r.batchRetryLocked(client, name, list); err != nil {
		return err
	}
	r.byService[name] = list
	r.destroyed = false
	r.kept.add(r)
	return nil
}

// batchLocked registers list, the instances of the application name,
// replacing what the client registered for it; r.mu held.
func (r *registration) batchLocked(client naming_client.INamingClient, name string, list []sentInstance) error {
	param := vo.BatchRegisterInstanceParam{ServiceName: name, GroupName: r.group}
	for _, in := range list {
		param.Instances = append(param.Instances, in.param)
	}
	ok, err := client.BatchRegisterInstance(param)
	if err != nil || !ok {
		return fmt.Errorf("register the instances of %s in Nacos %s: %v", name, r.regURL.Location, errors.Join(err, errors.New("not registered")))
	}
	return nil
}

// batchRetryLocked is batchLocked, tried again up to nacos.retry more
// times while it fails, waiting longer each time (nacosconf.Retry.Before); r.mu
// held (a start or an Update waits for it, as in Dubbo Java).
func (r *registration) batchRetryLocked(client naming_client.INamingClient, name string, list []sentInstance) error {
	retry, problems := nacosconf.ReadRetry(r.regURL)
	for _, p := range problems {
		lblog.Warnf("nacos discovery: %s", p)
	}
	err := retry.Do(r.sleep, func(err error, try int) {
		lblog.Warnf("nacos discovery: %v; trying again (%d of %d)", err, try, retry.Tries)
	}, func() error { return r.batchLocked(client, name, list) })
	if err != nil && retry.Tries > 0 {
		err = fmt.Errorf("%w (tried %d times, %s)", err, retry.Tries+1, nacosconf.RetryKey)
	}
	return err
}

// registerAgain registers the instances of the application service that
// r registered, all of them (a batch replaces the client's list), through
// the same client, as long as the instance of id is one of them: else
// (unregistered, or r destroyed) ErrWithdrawn and nothing registered.
func (r *registration) registerAgain(service, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byService[service]
	if r.destroyed || r.client == nil || !slices.ContainsFunc(list, func(in sentInstance) bool { return in.id == id }) {
		return ErrWithdrawn
	}
	return r.batchLocked(r.client, service, list)
}

// Update registers instance again: Unregister, then Register.
func (r *registration) Update(instance registry.ServiceInstance) error {
	if err := r.Unregister(instance); err != nil {
		return err
	}
	return r.Register(instance)
}

// Unregister removes instance from Nacos.
func (r *registration) Unregister(instance registry.ServiceInstance) error {
	return r.unregister(instance.GetServiceName(), instance.GetID(), instance.GetHost(), instance.GetPort())
}

// unregister removes the instance id of the application name, at host and
// port, from Nacos and from what r registered.
func (r *registration) unregister(name, id, host string, port int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	client, err := r.clientLocked()
	if err != nil {
		return err
	}
	ok, err := client.DeregisterInstance(vo.DeregisterInstanceParam{
		ServiceName: name, GroupName: r.group, Ip: host, Port: uint64(max(port, 0)), Ephemeral: true,
	})
	if err != nil || !ok {
		return fmt.Errorf("unregister %s of %s from Nacos %s: %v", net.JoinHostPort(host, strconv.Itoa(port)), name, r.regURL.Location, errors.Join(err, errors.New("not unregistered")))
	}
	r.byService[name] = slices.DeleteFunc(r.byService[name], func(in sentInstance) bool { return in.id == id })
	return nil
}

// destroy unregisters every instance registered and closes the client;
// from then on nothing is registered again (registerAgain) until the next
// Register.
func (r *registration) destroy() error {
	r.kept.remove(r)
	r.mu.Lock()
	r.destroyed = true
	var all []sentInstance
	for _, list := range r.byService {
		all = append(all, list...)
	}
	r.mu.Unlock()
	var errs []error
	for _, in := range all {
		if err := r.unregister(in.param.ServiceName, in.id, in.param.Ip, int(in.param.Port)); err != nil {
			lblog.Warnf("nacos discovery: %v", err)
			errs = append(errs, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		r.client.CloseClient()
		r.client = nil
	}
	return errors.Join(errs...)
}

// registerParam is the Nacos registration of in.
func (r *registration) registerParam(in registry.ServiceInstance) vo.RegisterInstanceParam {
	md := maps.Clone(in.GetMetadata())
	if md == nil {
		md = map[string]string{}
	}
	md[idKey] = in.GetID()
	return vo.RegisterInstanceParam{
		ServiceName: in.GetServiceName(),
		GroupName:   r.group,
		Ip:          in.GetHost(),
		Port:        uint64(max(in.GetPort(), 0)),
		Metadata:    md,
		// Set always: Nacos ignores an instance of weight 0.
		Weight:    registeredWeight(in.GetWeight(), r.regURL.GetParam(constant.RegistryKey+"."+constant.WeightKey, "")),
		Enable:    in.IsEnable(),
		Healthy:   in.IsHealthy(),
		Ephemeral: true,
		// The provider's zone (the registry param lb.zone), as the
		// instance's Nacos cluster: consumers read it back as the zone.
		ClusterName: r.regURL.GetParam(urlparam.ZoneKey, ""),
	}
}

// Nacos's range of instance weights, as dubbo-go bounds it.
const (
	minRegisteredWeight = 1.0
	maxRegisteredWeight = 10000.0
)

// registeredWeight is the instance weight registered for an instance of
// weight instance under a registry whose weight parameter is registry
// (dubbo-go v3.3.2's rule): the registry's when it is a number, else the
// instance's; 1.0 when not positive; at most 10000.
func registeredWeight(instance int64, registry string) float64 {
	w := float64(instance)
	if registry != "" {
		if f, err := strconv.ParseFloat(registry, 64); err == nil {
			w = f
		} else {
			lblog.Warnf("nacos discovery: registry weight %q is not a number; using the instance's weight", registry)
		}
	}
	switch {
	case !(w > 0): // also NaN
		return minRegisteredWeight
	case w > maxRegisteredWeight:
		return maxRegisteredWeight
	}
	return w
}
