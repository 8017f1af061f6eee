package rpcstatus

import (
	"testing"
	"time"
)

// Recent reads the completions since a time, at least a given number of
// the newest, and agrees with Summary when it reads them all.
func TestRecentReadsTheNewestCompletions(t *testing.T) {
	var w Window
	if s := w.Recent(0, 1); s.Samples != 0 {
		t.Fatalf("empty window: %+v", s)
	}
	ms := int64(time.Millisecond)
	// 200 completions, one per ms: the first 150 of 3 ms, then 50 of 1 ms,
	// every tenth of those failed.
	for i := int64(0); i < 200; i++ {
		lat := 3 * ms
		if i >= 150 {
			lat = ms
		}
		w.Add(i*ms, lat, i >= 150 && i%10 == 0)
	}
	if all, sum := w.Recent(0, 0), w.Summary(); all != sum {
		t.Fatalf("Recent over the whole window %+v, Summary %+v", all, sum)
	}
	s := w.Recent(150*ms, 16)
	if s.Samples != 50 || s.Errors != 5 || s.SuccessLatency != time.Millisecond || s.Span != 49*time.Millisecond || s.Last != 199*ms {
		t.Fatalf("since 150 ms: %+v", s)
	}
	// Fewer than atLeast since the time: the newest atLeast.
	s = w.Recent(190*ms, 20)
	if s.Samples != 20 || s.Span != 19*time.Millisecond {
		t.Fatalf("the newest 20: %+v", s)
	}
	if n := testing.AllocsPerRun(100, func() { w.Recent(150*ms, 16) }); n != 0 {
		t.Fatalf("Recent allocates %v", n)
	}
}
