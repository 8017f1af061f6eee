// Package nacoskeeper keeps a dubbo-go provider's Nacos registrations: at
// interface level it learns what the process registers, and when, from
// dubbo-go's registry protocol, which it wraps; at application level from
// our Nacos service discovery (nacosdiscovery.Registrations). It runs
// package keeper over both with the Nacos Open API as the server's view,
// and registers again through the Nacos registry's own Register or the
// discovery's own batch registration. See DESIGN.md.
//
// Importing it installs the wrapper: every call is passed on to dubbo-go's
// registry protocol unchanged (Export, Refer, Destroy, GetRegistries,
// UnregisterRegistries); the wrapper only records the exports to a Nacos
// registry, marks them withdrawn on UnregisterRegistries, Destroy or the
// exporter's UnExport, and tries again an export whose registration Nacos
// failed (nacos.retry, as Dubbo Java). Nothing is checked until Keep is
// called.
package nacoskeeper

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/registry"
	registryprotocol "dubbo.apache.org/dubbo-go/v3/registry/protocol"
	"github.com/dubbogo/gost/log/logger"

	"github.com/dubbogo-lb/lb/extension/internal/keeper"
	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
	"github.com/dubbogo-lb/lb/extension/internal/nacosdiscovery"
)

// nacosProtocol is the registry protocol name of dubbo-go's interface-level
// Nacos registry.
const nacosProtocol = "nacos"

var wrapper = newProtocol(registryprotocol.GetProtocol())

func init() {
	dgext.SetProtocol(constant.RegistryProtocol, func() base.Protocol { return wrapper })
}

// errWithdrawn is Register's answer for a registration the process
// withdrew: the keeper must not put it back.
var errWithdrawn = errors.New("the provider withdrew this registration")

// protocol wraps dubbo-go's registry protocol and records what it
// registers in Nacos.
type protocol struct {
	base.Protocol // dubbo-go's registry protocol

	// mu orders the keeper's registrations with dubbo-go's (Export) and
	// with the withdrawals: a repair either completes before a withdrawal
	// starts, or sees it and does not register.
	mu      sync.Mutex
	exports []*export
	seq     int
	readers map[string]*server // by registry key

	running atomic.Bool // a Keep is running

	sleep func(time.Duration) // between tries of a failed registration
}

// export is one URL registered in one Nacos registry.
type export struct {
	id        string
	regKey    string      // registryKey of the registry
	url       *common.URL // as registered
	service   string      // Nacos service name
	addr      string      // host:port
	withdrawn bool        // unregistered or unexported by the process
}

func newProtocol(inner base.Protocol) *protocol {
	return &protocol{Protocol: inner, readers: map[string]*server{}, sleep: time.Sleep}
}

// Export exports through dubbo-go's registry protocol and records the
// registration when the registry is Nacos (interface level).
//
// A registration that Nacos refuses or does not answer in time (dubbo-go
// then returns no exporter and the server does not start), or at
// application level the mapping of the interface to the application, is
// tried again,
// as Dubbo Java's Nacos registry does: up to nacos.retry more times
// (default 10), the first nacos.retry-wait later (default 10 ms), each
// next three times as long up to 30 s (nacosconf.Retry.Before; a try that
// timed out has waited nacos.timeout already). dubbo-go's Export is safe to repeat:
// the local export is cached, only the registration is done again.
func (p *protocol) Export(invoker base.Invoker) base.Exporter {
	u := invoker.GetURL()
	if !isNacos(u) && !isNacosDiscovery(u) {
		return p.exportOnce(invoker)
	}
	retry, problems := nacosconf.ReadRetry(u)
	for _, pr := range problems {
		logger.Warnf("[nacoskeeper] %s", pr)
	}
	var exp base.Exporter
	err := retry.Do(p.sleep, func(_ error, try int) {
		logger.Warnf("[nacoskeeper] registering %s in Nacos %s failed (the error is logged above); trying again (%d of %d)",
			u.SubURL.ServiceKey(), u.Location, try, retry.Tries)
	}, func() error {
		if exp = p.exportOnce(invoker); exp == nil {
			return errNotExported
		}
		return nil
	})
	if err != nil && retry.Tries > 0 {
		logger.Errorf("[nacoskeeper] registering %s in Nacos %s failed %d times; giving up (%s)",
			u.SubURL.ServiceKey(), u.Location, retry.Tries+1, nacosconf.RetryKey)
	}
	return exp
}

// errNotExported stands for an export that dubbo-go failed (it returns no
// exporter and logs the error).
var errNotExported = errors.New("not exported")

// exportOnce is one Export through dubbo-go's registry protocol, recorded.
func (p *protocol) exportOnce(invoker base.Invoker) base.Exporter {
	p.mu.Lock()
	defer p.mu.Unlock()
	exp := p.Protocol.Export(invoker)
	if exp == nil {
		return nil // dubbo-go registered nothing
	}
	e := p.record(invoker)
	if e == nil {
		return exp
	}
	return &exporter{Exporter: exp, p: p, e: e}
}

// isNacos tells whether regURL, an export's invoker URL, is the registry
// URL of a Nacos registry with the provider URL as its SubURL.
func isNacos(regURL *common.URL) bool {
	if regURL == nil || regURL.SubURL == nil {
		return false
	}
	name := regURL.Protocol
	if name == constant.RegistryProtocol {
		name = regURL.GetParam(constant.RegistryKey, "")
	}
	return name == nacosProtocol
}

// isNacosDiscovery tells whether regURL, an export's invoker URL, is the
// registry URL of application-level discovery in Nacos: its export maps
// the interface to the application in Nacos's configuration, which fails
// as a registration does while the client connects.
func isNacosDiscovery(regURL *common.URL) bool {
	return regURL != nil && regURL.SubURL != nil && regURL.Protocol == constant.ServiceRegistryProtocol &&
		regURL.GetParam(constant.RegistryKey, "") == nacosProtocol
}

// record notes what Export registered for invoker, whose URL is the
// registry URL with the provider URL as its SubURL; nil when it is not a
// Nacos registry.
func (p *protocol) record(invoker base.Invoker) *export {
	regURL := invoker.GetURL()
	if !isNacos(regURL) {
		return nil
	}
	u := registeredURL(regURL.SubURL.Clone(), regURL)
	e := &export{regKey: registryKey(regURL), url: u, service: serviceName(u), addr: addr(u)}
	for _, old := range p.exports {
		if !old.withdrawn && old.regKey == e.regKey && old.service == e.service && old.addr == e.addr {
			old.url = u // exported again: the latest registration counts
			return old
		}
	}
	p.seq++
	e.id = strconv.Itoa(p.seq)
	p.exports = append(p.exports, e)
	return e
}

// GetRegistries returns dubbo-go's registries.
func (p *protocol) GetRegistries() []registry.Registry {
	if f, ok := p.Protocol.(registry.RegistryFactory); ok {
		return f.GetRegistries()
	}
	return nil
}

// UnregisterRegistries withdraws every registration, then unregisters
// through dubbo-go (graceful shutdown).
func (p *protocol) UnregisterRegistries() {
	p.withdrawAll()
	if u, ok := p.Protocol.(base.RegistryUnregisterer); ok {
		u.UnregisterRegistries()
		return
	}
	p.Protocol.Destroy() // what dubbo-go's shutdown does without the capability
}

// Destroy withdraws every registration, then destroys dubbo-go's
// registry protocol.
func (p *protocol) Destroy() {
	p.withdrawAll()
	p.Protocol.Destroy()
}

func (p *protocol) withdrawAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.exports {
		e.withdrawn = true
	}
	p.exports = nil
}

func (p *protocol) withdraw(e *export) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.withdrawn = true
	for i, x := range p.exports {
		if x == e {
			p.exports = append(p.exports[:i:i], p.exports[i+1:]...)
			break
		}
	}
}

// exporter withdraws its registration when the service is unexported.
type exporter struct {
	base.Exporter
	p *protocol
	e *export
}

func (x *exporter) UnExport() {
	x.p.withdraw(x.e)
	x.Exporter.UnExport()
}

// Kept returns the registrations to keep: recorded, not withdrawn, in a
// registry dubbo-go still has.
func (p *protocol) Kept() []keeper.Registration {
	regs := map[string]registry.Registry{}
	for _, r := range p.GetRegistries() {
		if r == nil || r.GetURL() == nil || r.GetURL().Protocol != nacosProtocol {
			continue
		}
		regs[registryKey(r.GetURL())] = r
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []keeper.Registration
	for _, e := range p.exports {
		reg := regs[e.regKey]
		if reg == nil {
			continue
		}
		srv := p.server(e.regKey, reg.GetURL())
		if srv == nil {
			continue
		}
		out = append(out, keeper.Registration{
			ID: e.id, Server: srv, Service: e.service, Group: nacosGroup(reg.GetURL()), Addr: e.addr,
			Register: func() error { return p.register(e, reg) },
		})
	}
	return out
}

// register registers e again through the Nacos registry's own Register,
// unless the process withdrew it.
func (p *protocol) register(e *export, reg registry.Registry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.withdrawn {
		return errWithdrawn
	}
	return reg.Register(e.url.Clone())
}

// server returns the Open API view of the Nacos registry regURL; p.mu is
// held.
func (p *protocol) server(key string, regURL *common.URL) *server {
	if s, ok := p.readers[key]; ok {
		return s
	}
	r, err := nacosdiscovery.NewReader(regURL)
	if err != nil {
		logger.Warnf("keeper: cannot read the Nacos registry %s: %v", regURL.Location, err)
		p.readers[key] = nil // once
		return nil
	}
	s := &server{r: r}
	p.readers[key] = s
	return s
}

// server is a keeper.Server over the Nacos Open API.
type server struct{ r *nacosdiscovery.Reader }

func (s *server) Addrs(service, group string) ([]string, error) {
	list, err := s.r.Instances(service, group)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list))
	for _, in := range list {
		out = append(out, net.JoinHostPort(in.Ip, strconv.FormatUint(in.Port, 10)))
	}
	return out, nil
}

// apps is the keeper.Source of the application-level instances that our
// Nacos service discovery registered (nacosdiscovery.Registrations).
type apps struct{ regs *nacosdiscovery.Registrations }

// Kept returns the instances registered and not withdrawn; each is
// registered again through its discovery's own client and batch.
func (a apps) Kept() []keeper.Registration {
	list := a.regs.List()
	out := make([]keeper.Registration, 0, len(list))
	for _, r := range list {
		out = append(out, keeper.Registration{
			ID: "app/" + r.ID, Server: &server{r: r.Reader}, Service: r.Service, Group: r.Group, Addr: r.Addr,
			Register: r.Register,
		})
	}
	return out
}

// Keep keeps, until ctx is done, this process's Nacos registrations, as
// package keeper describes (one read of the Open API per registration
// every o.Interval; one missing on o.Misses reads in a row while the
// server answers is registered again):
//   - interface level: every exported service, registered again through
//     the dubbo-go registry that registered it, with the same URL, hence
//     the same service, group, metadata and weight;
//   - application level: every instance that our service discovery
//     registered and recorded in appRegs (nil: none), registered again
//     through the same discovery, client and batch (the application's
//     whole list).
//
// It returns at once; what is registered later is kept too. It never
// registers what the process withdrew (graceful shutdown, unexport,
// unregister). An error when dubbo-go's registry protocol is not this
// package's wrapper (someone replaced it) or when a Keep is already
// running.
func Keep(ctx context.Context, o keeper.Options, appRegs *nacosdiscovery.Registrations) error {
	if dgext.GetProtocol(constant.RegistryProtocol) != base.Protocol(wrapper) {
		return errors.New("keeper: dubbo-go's registry protocol was replaced after this module's; cannot see what the process registers")
	}
	if !wrapper.running.CompareAndSwap(false, true) {
		return errors.New("keeper: already running")
	}
	if o.Warnf == nil {
		o.Warnf = logger.Warnf
	}
	k := keeper.New(keeper.Sources{wrapper, apps{appRegs}}, o)
	go func() {
		defer wrapper.running.Store(false)
		k.Run(ctx)
	}()
	return nil
}
