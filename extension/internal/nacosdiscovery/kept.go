package nacosdiscovery

import (
	"errors"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// ErrWithdrawn is Registered.Register's answer for an instance the
// process withdrew (unregistered, or its discovery destroyed): the keeper
// must not put it back.
var ErrWithdrawn = errors.New("the provider withdrew this instance")

// Registrations records the application-level instances that the service
// discoveries sharing it (Options.Registrations) registered and have not
// withdrawn, for the registration keeper (extension.KeepRegistered). The
// zero value is ready; it is safe for concurrent use.
type Registrations struct {
	mu  sync.Mutex
	seq int
	set map[*registration]int // the registrations that registered, numbered
}

// Registered is one application-level instance registered and not
// withdrawn.
type Registered struct {
	ID      string // the same from one List to the next; unique in its Registrations
	Service string // the application, the instance's Nacos service
	Group   string // Nacos group
	Addr    string // host:port, as the Open API lists it
	// Reader reads the discovery's Nacos server (its namespace and login).
	Reader *Reader
	// Register registers the application's instances again, every one
	// the discovery registered (Nacos's batch registration replaces the
	// client's list), through the discovery's own Nacos client, hence
	// with the same metadata and weight; ErrWithdrawn, and nothing
	// registered, when the process withdrew the instance since List.
	Register func() error
}

func (s *Registrations) add(r *registration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[r]; ok {
		return
	}
	if s.set == nil {
		s.set = map[*registration]int{}
	}
	s.seq++
	s.set[r] = s.seq
}

func (s *Registrations) remove(r *registration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, r)
}

// List returns the instances registered and not withdrawn now, by
// registry, application and instance id.
func (s *Registrations) List() []Registered {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	regs := maps.Clone(s.set)
	s.mu.Unlock()
	var out []Registered
	for _, r := range slices.SortedFunc(maps.Keys(regs), func(a, b *registration) int { return regs[a] - regs[b] }) {
		out = r.registered(strconv.Itoa(regs[r]), out)
	}
	return out
}

// registered appends to out r's instances registered and not withdrawn,
// their IDs prefixed with prefix.
func (r *registration) registered(prefix string, out []Registered) []Registered {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.destroyed || r.client == nil {
		return out
	}
	if r.reader == nil {
		rd, err := NewReader(r.clientURL)
		if err != nil {
			lblog.Warnf("nacos discovery: cannot read the registrations in %s: %v", r.regURL.Location, err)
			return out
		}
		r.reader = rd
	}
	for _, service := range slices.Sorted(maps.Keys(r.byService)) {
		for _, in := range r.byService[service] {
			id := in.id
			out = append(out, Registered{
				ID:      prefix + "/" + service + "/" + id,
				Service: service, Group: r.group,
				Addr:     net.JoinHostPort(in.param.Ip, strconv.FormatUint(in.param.Port, 10)),
				Reader:   r.reader,
				Register: func() error { return r.registerAgain(service, id) },
			})
		}
	}
	return out
}
