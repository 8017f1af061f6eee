package simulate

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueuePopsInTimeThenScheduleOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q queue
	for i := range 1000 {
		q.push(event{at: rng.Int64N(50), seq: uint64(i)})
	}
	prev := event{at: -1}
	for len(q) > 0 {
		e := q.pop()
		require.True(t, prev.before(&e), "popped %+v after %+v", e, prev)
		prev = e
	}
}
