package subset

import (
	"fmt"
	"testing"
)

func providers(n int) []Provider {
	ps := make([]Provider, n)
	for i := range ps {
		ps[i] = Provider{Key: fmt.Sprintf("10.0.%d.%d:20000", i/256, i%256), Weight: 100}
	}
	return ps
}

func TestOffReturnsEverything(t *testing.T) {
	ps := providers(5)
	got := Select(nil, ps, Consumer{ID: "c"}, Options{}, nil)
	if len(got) != 5 {
		t.Fatalf("off: got %v, want all 5", got)
	}
}

func TestSizeIsHeld(t *testing.T) {
	ps := providers(100)
	for _, c := range []Consumer{{ID: "c"}, {ID: "c", Index: 3, Count: 100}} {
		got := Select(nil, ps, c, Options{Size: 10}, nil)
		if len(got) != 10 {
			t.Errorf("%+v: got %d members %v, want 10", c, len(got), got)
		}
	}
}
