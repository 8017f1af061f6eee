package member

import (
	"slices"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// The sizes of parts (see layout): parts are made of about partSize
// providers (flush), never more than partMax; a part shorter than partMin
// is made again with the next (the last part of a list may be shorter).
// Registry.SetPartSize sets another size (at least partSize).
const (
	partSize = 128
	partMax  = 2 * partSize
	partMin  = partSize / 4
	// coarseBits sets the grain of layout.coarse: 1<<coarseBits must not
	// exceed partMin, so that finding a position's part takes at most two
	// steps from there.
	coarseBits = 5
)

// part is a run of consecutive providers of a membership: what does not
// depend on the method, for each. Immutable once made; a part whose
// providers all stay, in order, serves the memberships that follow.
type part struct {
	providers []*rpcstatus.Provider
	meta      []*warmup.Meta
	zones     []string // nil when no provider of the part names one
}

// layout is the membership of a list in parts, in the list's order, so
// that a change of membership makes the parts it touches and shares the
// others with the layout before it (the "parts" section of the design
// note). Immutable once made.
type layout struct {
	parts []*part
	// starts[k] is the position of parts[k]'s first provider;
	// starts[len(parts)] is the length of the list.
	starts []int32
	// coarse[c] is the part that holds position c<<coarseBits.
	coarse []int32
	zoned  bool // some provider names a zone
	size   int  // the size of its parts (partSize unless set otherwise)
}

// locate returns the index of the part that holds position i and i's
// offset in it.
func (l *layout) locate(i int) (k, offset int) {
	if len(l.parts) == 1 {
		return 0, i // up to about partSize providers: no search
	}
	k = int(l.coarse[i>>coarseBits])
	for int(l.starts[k+1]) <= i {
		k++
	}
	return k, i - int(l.starts[k])
}

// at returns the part that holds position i and i's offset in it.
func (l *layout) at(i int) (*part, int) {
	k, o := l.locate(i)
	return l.parts[k], o
}

// find returns the index of p in l, looking from *from on, and moves
// *from past it: walked over the parts of a later layout in order, it
// finds those that stay, which keep their order.
func (l *layout) find(p *part, from *int) (int, bool) {
	for k := *from; k < len(l.parts); k++ {
		if l.parts[k] == p {
			*from = k + 1
			return k, true
		}
	}
	return 0, false
}

// provider returns the statistics of the provider at position i.
func (l *layout) provider(i int) *rpcstatus.Provider {
	p, o := l.at(i)
	return p.providers[o]
}

// meta returns the metadata of the provider at position i.
func (l *layout) meta(i int) *warmup.Meta {
	p, o := l.at(i)
	return p.meta[o]
}

// zone returns the zone of the provider at position i, "" for none.
func (l *layout) zone(i int) string {
	if !l.zoned {
		return ""
	}
	p, o := l.at(i)
	if p.zones == nil {
		return ""
	}
	return p.zones[o]
}

// len returns the number of providers.
func (l *layout) len() int { return int(l.starts[len(l.starts)-1]) }

// newcomer returns what a layout holds of the provider at position i when
// the layout before it does not hold it: its statistics, metadata and zone.
type newcomer func(i int) (*rpcstatus.Provider, *warmup.Meta, string)

// layoutBuilder makes a layout from the parts of an old one and runs of
// providers it copies or reads.
type layoutBuilder struct {
	l    layout
	list []base.Invoker
	old  *layout // nil at first
	from []int32 // from[i] is the old position of provider i, -1 for none
	read newcomer
}

// newLayout returns the layout of list. old is the layout of the list
// before (nil at first), from maps each position of list to the old
// position of the provider there (-1 for a provider that came), and read
// reads a provider that came. A part of old whose providers all stay, in
// the same order, is shared; the others are made again, from what old
// holds for the providers that stay and from read for the others.
// size is the size of its parts (partSize, or more).
func newLayout(list []base.Invoker, size int, old *layout, from []int32, read newcomer) *layout {
	b := layoutBuilder{l: layout{size: size}, list: list, old: old, from: from, read: read}
	short := size / 4 // partMin at partSize
	n := len(list)
	b.l.starts = make([]int32, 0, n/size+2)
	run := 0 // the run of providers still to place starts there
	for i := 0; i < n; {
		if k, ok := b.reusable(i); ok && (i == run || i-run >= short) {
			b.flush(run, i)
			b.l.parts = append(b.l.parts, old.parts[k])
			b.l.starts = append(b.l.starts, int32(i))
			b.l.zoned = b.l.zoned || old.parts[k].zones != nil
			i += len(old.parts[k].providers)
			run = i
			continue
		}
		i++
	}
	b.flush(run, n)
	b.l.starts = append(b.l.starts, int32(n))
	b.l.index()
	return &b.l
}

// reusable reports whether a part k of the old layout can serve at
// position i: it starts at the old position of provider i, is not short,
// and all its providers follow in order.
func (b *layoutBuilder) reusable(i int) (int, bool) {
	if b.old == nil || b.from[i] < 0 {
		return 0, false
	}
	j := int(b.from[i])
	k := int(b.old.coarse[j>>coarseBits])
	for int(b.old.starts[k+1]) <= j {
		k++
	}
	size := len(b.old.parts[k].providers)
	if int(b.old.starts[k]) != j || size < b.l.size/4 || i+size > len(b.list) {
		return 0, false
	}
	for t := 1; t < size; t++ {
		if int(b.from[i+t]) != j+t {
			return 0, false
		}
	}
	return k, true
}

// flush places the providers at positions [a, e) in new parts of about
// the layout's size each: n/size of them, rounded, at least one, so that parts
// that two changes ran together are made apart again. A part it makes
// holds 2/3 to 3/2 of size providers unless it is the only one.
func (b *layoutBuilder) flush(a, e int) {
	n, size := e-a, b.l.size
	if n == 0 {
		return
	}
	pieces := max(1, (n+size/2)/size)
	for q := range pieces {
		lo, hi := a+n*q/pieces, a+n*(q+1)/pieces
		b.l.parts = append(b.l.parts, b.make(lo, hi))
		b.l.starts = append(b.l.starts, int32(lo))
	}
}

// make returns a new part of the providers at positions [a, e).
func (b *layoutBuilder) make(a, e int) *part {
	p := &part{providers: make([]*rpcstatus.Provider, e-a), meta: make([]*warmup.Meta, e-a)}
	for i := a; i < e; i++ {
		var zone string
		if j := b.from[i]; j >= 0 {
			q, o := b.old.at(int(j))
			p.providers[i-a], p.meta[i-a] = q.providers[o], q.meta[o]
			if q.zones != nil {
				zone = q.zones[o]
			}
		} else {
			p.providers[i-a], p.meta[i-a], zone = b.read(i)
		}
		if zone != "" {
			if p.zones == nil {
				p.zones = make([]string, e-a)
			}
			p.zones[i-a] = zone
		}
	}
	b.l.zoned = b.l.zoned || p.zones != nil
	return p
}

// index fills coarse from starts.
func (l *layout) index() {
	n := l.len()
	if n == 0 {
		return
	}
	l.coarse = make([]int32, (n-1)>>coarseBits+1)
	k := int32(0)
	for c := range l.coarse {
		for int(l.starts[k+1]) <= c<<coarseBits && int(k) < len(l.parts)-1 {
			k++
		}
		l.coarse[c] = k
	}
}

// cut returns flat, values of the providers of l in order, cut in runs by
// l's parts: a part of the layout old whose run in oldRuns holds the same
// values gives that run, the others are copied. old may be nil.
func cut[T comparable](flat []T, l, old *layout, oldRuns [][]T) [][]T {
	return makeRuns(l, old, oldRuns,
		func(run []T, k int) bool { return slices.Equal(run, flat[l.starts[k]:l.starts[k+1]]) },
		func(i int, v *T) { *v = flat[i] })
}

// makeRuns returns a run for each part k of l: the run in oldRuns of the
// same part of the layout old (nil: none) when keep(that run, k), else a new
// run whose value for each provider i fill(i, v) sets. The new runs share
// one array.
func makeRuns[T any](l, old *layout, oldRuns [][]T, keep func(run []T, k int) bool, fill func(i int, v *T)) [][]T {
	runs := make([][]T, len(l.parts))
	fresh, j := 0, 0
	for k, p := range l.parts {
		if old != nil {
			if t, ok := old.find(p, &j); ok && keep(oldRuns[t], k) {
				runs[k] = oldRuns[t]
				continue
			}
		}
		fresh += int(l.starts[k+1] - l.starts[k])
	}
	buf := make([]T, fresh)
	for k := range runs {
		if runs[k] != nil {
			continue
		}
		start, n := int(l.starts[k]), int(l.starts[k+1]-l.starts[k])
		run := buf[:n:n]
		buf = buf[n:]
		for o := range run {
			fill(start+o, &run[o])
		}
		runs[k] = run
	}
	return runs
}
