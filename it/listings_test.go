package it

import (
	"testing"
	"time"
)

// A consumer's stretch without a provider counts from the last answer of a
// Nacos node that did not list it: the stretch that only follows the
// registry passes, the same stretch with the provider listed throughout
// fails (the control). It needs no Nacos.
func TestMissingCountsOnlyWhileNacosListsTheProvider(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	w := &reportLog{}
	for i := range 40 { // 20 s of 500 ms intervals, 15 calls each
		r := report{end: t0.Add(time.Duration(i+1) * 500 * time.Millisecond)}
		r.Seconds, r.Calls, r.By = 0.5, 15, map[string]int64{"a": 8, "b": 7}
		if i >= 4 && i < 30 { // b not called from +2 s to +15 s
			r.By = map[string]int64{"a": 15}
		}
		w.reps = append(w.reps, r)
	}
	l := &listings{without: map[string][]unlistedAt{}}
	for at := 2 * time.Second; at <= 12*time.Second; at += listingPoll { // a node without b from +2 s to +12 s
		l.without["b"] = append(l.without["b"], unlistedAt{t0.Add(at), "node2"})
	}
	t1 := t0.Add(time.Minute)

	d, who := w.longestMissing(t0, t1, l.lastUnlisted, "a", "b")
	if who != "b" || d != 3*time.Second {
		t.Errorf("with b unlisted until +12 s: %v without %q; want 3s without b (+12 s to +15 s)", d, who)
	}
	d, who = w.longestMissing(t0, t1, nil, "a", "b")
	if who != "b" || d != 13*time.Second {
		t.Errorf("with b listed throughout: %v without %q; want 13s without b", d, who)
	}
	gaps := l.gaps("b", t0, t1)
	if len(gaps) != 1 || gaps[0].node != "node2" || gaps[0].from != t0.Add(2*time.Second) || gaps[0].to != t0.Add(12*time.Second) || gaps[0].polls != 41 {
		t.Errorf("gaps of b: %+v; want one on node2 from +2 s to +12 s, 41 answers", gaps)
	}
}
