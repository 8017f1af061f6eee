package nacosdiscovery

import (
	"cmp"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/model"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/subset"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// A subsetting is the subset of one reference (lb.subset.size): the
// providers of its service that the reference holds, drawn by
// subset.Select from the full set the registry lists, the consumer's
// position among the consumers of the service (when the registry lists
// them and this consumer among them: deterministic aperture; else
// rendezvous hashing seeded with the consumer's ID), and the members that
// do not serve (unhealthy or disabled in Nacos, ejected by outlier
// detection), past which the subset grows.
type subsetting struct {
	cfg   urlparam.Subset
	opts  subset.Options
	ref   *common.URL // the reference's URL
	key   string      // the reference's service key
	level string      // "interface" or "application", for describe
	self  string      // the address this consumer registers under
	id    string      // the rendezvous seed

	mu        sync.Mutex
	consumers []string        // the addresses of the consumers listed, sorted; nil: none listed
	ejected   map[string]bool // held members that outlier detection keeps out, by address
	held      map[string]bool // the addresses held after the latest pick
	status    describe.Subset
	ps        []subset.Provider // scratch of pick
	idx       []int
}

// candidate is one provider of the full set.
type candidate struct {
	url    *common.URL
	usable bool // enabled and healthy in the registry
}

// newSubsetting returns the subsetting of the reference ref under cfg
// (cfg.Size > 0), drawn at level.
func newSubsetting(ref *common.URL, cfg urlparam.Subset, level string) *subsetting {
	self := registeredAddress()
	s := &subsetting{
		cfg: cfg, ref: ref, key: ref.ServiceKey(), level: level, self: self,
		id:   self + "#" + strconv.Itoa(os.Getpid()),
		opts: subset.Options{Size: cfg.Size},
	}
	// Zone-aware routing sees every zone: the subset is drawn within zones.
	if strings.TrimSpace(urlparam.ServiceParam(ref, urlparam.LocalZoneKey)) != "" || strings.TrimSpace(os.Getenv(urlparam.LocalZoneEnv)) != "" {
		s.opts.Zones = true
	}
	s.status = describe.Subset{Service: s.key, Registry: level, Mode: describe.SubsetRendezvous, Size: cfg.Size}
	return s
}

// readSubset returns the subsetting configuration of the reference ref,
// logging what it replaced by a default.
func readSubset(ref *common.URL) urlparam.Subset {
	cfg, problems := urlparam.ReadSubset(ref)
	for _, p := range problems {
		lblog.Warnf("nacos discovery: %s: %s", ref.ServiceKey(), p)
	}
	return cfg
}

// registeredAddress is the address (ip:port) under which dubbo-go
// registers this consumer's references at interface level: the
// environment's DUBBO_IP_TO_REGISTRY and DUBBO_PORT_TO_REGISTRY, else the
// local IP and port 80 (common.HandleRegisterIPAndPort).
func registeredAddress() string {
	u := &common.URL{}
	common.HandleRegisterIPAndPort(u)
	return u.Ip + ":" + u.Port
}

// consumersService is the Nacos service under which dubbo-go registers the
// consumers of ref's interface, version and group at interface level.
func consumersService(ref *common.URL) string {
	return strings.Join([]string{common.DubboNodes[common.CONSUMER], ref.GetParam(constant.InterfaceKey, ""),
		ref.GetParam(constant.VersionKey, ""), ref.GetParam(constant.GroupKey, "")}, ":")
}

// setConsumers takes the consumers the registry lists: the enabled,
// healthy instances of the consumers' service whose registration says they
// draw their subset by aperture (lb.subset.size set, lb.subset.mode auto):
// a consumer of the whole set, or one that ranks by rendezvous, takes no
// place on the ring. It reports whether the list changed.
func (s *subsetting) setConsumers(list []model.Instance) bool {
	byHost := usableByHost(list)
	maps.DeleteFunc(byHost, func(_ string, in model.Instance) bool {
		cfg, _ := urlparam.ParseSubset(func(key string) string { return in.Metadata[key] })
		return cfg.Size <= 0 || cfg.Mode != urlparam.SubsetAuto
	})
	addrs := slices.Sorted(maps.Keys(byHost))
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(addrs, s.consumers) && s.consumers != nil {
		return false
	}
	s.consumers = addrs
	return true
}

// position returns the consumer's place in the fleet: its index among the
// consumers listed, itself included, when any is listed and the mode
// allows aperture; else unknown (rendezvous). The consumer counts itself
// before its own registration is listed (dubbo-go registers it just after
// subscribing), so that the subset does not move when it appears. Called
// with s.mu held.
func (s *subsetting) position() subset.Consumer {
	c := subset.Consumer{ID: s.id}
	if s.cfg.Mode == urlparam.SubsetRendezvous || len(s.consumers) == 0 {
		return c
	}
	i, found := slices.BinarySearch(s.consumers, s.self)
	c.Index, c.Count = i, len(s.consumers)
	if !found {
		c.Count++
	}
	return c
}

// pick returns the addresses of cands that the reference holds: those
// subset.Select chooses, the members that do not serve (not usable, or
// ejected) passed over and kept.
func (s *subsetting) pick(cands []candidate) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ps = s.ps[:0]
	total := map[string]bool{}
	for _, c := range cands {
		total[c.url.Location] = true
		s.ps = append(s.ps, subset.Provider{
			Key:    c.url.Location,
			Weight: warmup.Parse(c.url, "", time.Time{}).Weight,
			Zone:   urlparam.ServiceParam(c.url, urlparam.ZoneKey),
		})
	}
	pos := s.position()
	excluded := func(i int) bool { return !cands[i].usable || s.ejected[cands[i].url.Location] }
	s.idx = subset.Select(s.idx, s.ps, pos, s.opts, excluded)
	held := make(map[string]bool, len(s.idx))
	serving := 0
	for _, i := range s.idx {
		held[cands[i].url.Location] = true
		if !excluded(i) {
			serving++
		}
	}
	members := slices.Sorted(maps.Keys(held))
	if !maps.Equal(held, s.held) {
		lblog.Warnf("nacos discovery: %s (%s level, %s): now holds %d of %d providers: %s",
			s.key, s.level, modeOf(pos), len(held), len(total), strings.Join(members[:min(len(members), describe.MaxSubsetMembers)], " "))
	}
	s.held = held
	s.status.Mode, s.status.Index, s.status.Count = modeOf(pos), pos.Index, pos.Count
	s.status.Held, s.status.Serving, s.status.Total = len(held), serving, len(total)
	s.status.Members = members[:min(len(members), describe.MaxSubsetMembers)]
	return held
}

func modeOf(c subset.Consumer) string {
	if c.Count > 0 {
		return describe.SubsetAperture
	}
	return describe.SubsetRendezvous
}

// checkEjections reads which held members outlier detection keeps out now
// (ejected for any method of the reference's service) and reports whether
// that changed since the last check.
func (s *subsetting) checkEjections() bool {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	now := map[string]bool{}
	rpcstatus.Range(func(u *common.URL, p *rpcstatus.Provider) bool {
		if rpcstatus.Destroyed(u) || !held[u.Location] || now[u.Location] || u.ServiceKey() != s.key {
			return true
		}
		p.Methods(func(_ string, st *rpcstatus.Stats) {
			if st.EjectedNow() {
				now[u.Location] = true
			}
		})
		return true
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	// A member no longer held is no longer watched: forget it.
	if maps.Equal(now, s.ejected) || len(now) == 0 && len(s.ejected) == 0 {
		return false
	}
	s.ejected = now
	return true
}

// snapshot returns what describe shows of the subset.
func (s *subsetting) snapshot() describe.Subset {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.status
	out.Members = slices.Clone(out.Members)
	return out
}

// live is every subsetting in use, for Subsets.
var live struct {
	sync.Mutex
	set map[*subsetting]struct{}
}

func (s *subsetting) start() {
	live.Lock()
	if live.set == nil {
		live.set = map[*subsetting]struct{}{}
	}
	live.set[s] = struct{}{}
	live.Unlock()
}

func (s *subsetting) stop() {
	live.Lock()
	delete(live.set, s)
	live.Unlock()
}

// Subsets returns the subset of every reference that subsets
// (lb.subset.size), by service and level: the source of
// describe.Snapshot.Subsets.
func Subsets() []describe.Subset {
	live.Lock()
	all := slices.Collect(maps.Keys(live.set))
	live.Unlock()
	out := make([]describe.Subset, 0, len(all))
	for _, s := range all {
		out = append(out, s.snapshot())
	}
	slices.SortFunc(out, func(a, b describe.Subset) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Registry, b.Registry))
	})
	return out
}

// watchEjections calls changed whenever the held members that outlier
// detection keeps out change, checking every interval, until done closes.
func (s *subsetting) watchEjections(interval time.Duration, done <-chan struct{}, changed func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if s.checkEjections() {
				changed()
			}
		}
	}
}

// The levels a subset is drawn at (describe.Subset.Registry).
const (
	levelInterface   = "interface"
	levelApplication = "application"
)
