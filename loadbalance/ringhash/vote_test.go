package ringhash

import (
	"slices"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// hash.nodes, which each provider may register, is the value most
// providers read, whatever the order of the list: one provider that
// registers 1000 among four with the default changes no ring, in any
// position, and one WARN names it. Where the consumer sets the key, its
// value is every provider's.
func TestSharedValueIsTheMajoritysInEveryOrder(t *testing.T) {
	logs := lbtest.CaptureLogs(t)
	list := []base.Invoker{
		lbtest.Provider(24000, map[string]string{"hash.nodes": "1000"}),
		lbtest.Provider(24001, nil), lbtest.Provider(24002, nil), lbtest.Provider(24003, nil), lbtest.Provider(24004, nil),
	}
	for k := range list {
		order := slices.Clone(list)
		order[0], order[k] = order[k], order[0]
		b := New(Options{})
		v, _ := b.sk.View(order, "Say")
		assert.Equal(t, defaultNodes, v.Table.ring.nodes, "the dissenter in position %d", k)
	}
	var named int
	for _, l := range logs() {
		if strings.Contains(l, `providers disagree on hash.nodes; using "", which 4 of 5 read`) && strings.Contains(l, `127.0.0.1:24000="1000"`) {
			named++
		}
	}
	assert.Equal(t, len(list), named, "one WARN per balancer naming the dissenter: %q", logs())

	// Negative control: the majority registering 1000 gets 1000.
	most := []base.Invoker{lbtest.Provider(24010, nil)}
	for i := range 3 {
		most = append(most, lbtest.Provider(24011+i, map[string]string{"hash.nodes": "1000"}))
	}
	v, _ := New(Options{}).sk.View(most, "Say")
	assert.Equal(t, 1000, v.Table.ring.nodes)

	// The consumer's own value is everyone's.
	mine := lbtest.SetConsumer("hash.nodes", "40", lbtest.Provider(24020, map[string]string{"hash.nodes": "1000"}), lbtest.Provider(24021, nil))
	v, _ = New(Options{}).sk.View(mine, "Say")
	require.NotNil(t, v)
	assert.Equal(t, 40, v.Table.ring.nodes)
}
