package member

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Builds racing for a key make the value once and all get it; another key
// is built apart; a Set without a memo (a zone's) builds every time.
func TestMemoBuildsOncePerKey(t *testing.T) {
	s := &Set{memo: new(memo)}
	var builds atomic.Int32
	build := func() *int { builds.Add(1); v := 7; return &v }
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = Memo(s, "ring", build) }()
	}
	wg.Wait()
	if builds.Load() != 1 {
		t.Fatalf("%d builds for one key, want 1", builds.Load())
	}
	for _, v := range got {
		if v != got[0] {
			t.Fatal("callers got different values for one key")
		}
	}
	if Memo(s, "other", build) == got[0] || builds.Load() != 2 {
		t.Errorf("another key shares the value (builds %d)", builds.Load())
	}
	zoneSet := &Set{}
	Memo(zoneSet, "ring", build)
	Memo(zoneSet, "ring", build)
	if builds.Load() != 4 {
		t.Errorf("a Set without a memo: %d builds in all, want 4", builds.Load())
	}
}
