package ringhash

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// withAttachment is a call of Say with the attachment key=value (none when
// value is "") and the argument arg.
func withAttachment(key, value, arg string) base.Invocation {
	inv := invocation.NewRPCInvocation("Say", []any{arg}, nil)
	if value != "" {
		inv.SetAttachment(key, value)
	}
	return inv
}

func attachmentProviders(params map[string]string) []base.Invoker {
	list := make([]base.Invoker, 4)
	for i := range list {
		list[i] = lbtest.Provider(23000+i, params)
	}
	return list
}

// TestHashAttachmentIsTheKey: with hash.attachment the attachment's value
// is the key, hashed as the same string would be as an argument.
func TestHashAttachmentIsTheKey(t *testing.T) {
	b := New(Options{})
	byArg := New(Options{})
	plain := attachmentProviders(nil) // the same addresses: the same ring
	for _, params := range []map[string]string{{attachmentKey: "x-user"}, {"methods.Say." + attachmentKey: "x-user"}} {
		list := attachmentProviders(params)
		for _, user := range []string{"alice", "bob", "carol", "dave", "erin"} {
			want := byArg.Select(plain, lbtest.Call("Say", user)).GetURL().Location
			for _, arg := range []string{"a", "b", "c"} { // only the attachment counts
				assert.Equal(t, want, b.Select(list, withAttachment("x-user", user, arg)).GetURL().Location, "%v %s", params, user)
			}
		}
	}
}

// TestMissingHashAttachmentIsARandomKey: a call without the attachment
// gets a random key (gRFC A76), so such calls spread over the ring's
// shares; the negative control, a constant key, sends them all to one.
func TestMissingHashAttachmentIsARandomKey(t *testing.T) {
	const picks = 20000
	defer lblog.Capture(func(string) {})() // no call is counted: the missing-filter WARN
	list := attachmentProviders(map[string]string{attachmentKey: "x-user"})
	b := New(Options{Env: lbenv.Env{Rand: algo.Seeded(5).Uint64}})
	v, _ := b.sk.View(list, "Say")
	shares := v.Table.ring.Shares()
	counts := make([]int, len(list))
	for range picks {
		got := b.Select(list, withAttachment("x-user", "", "same-argument"))
		i, ok := v.Index(got)
		require.True(t, ok)
		counts[i]++
	}
	for i, n := range counts {
		assert.InDelta(t, 100*shares[i], 100*float64(n)/picks, lbtest.Tol(shares[i], picks), "provider %d: %v of %v", i, counts, shares)
	}

	// Control: the same calls keyed by their (constant) argument.
	plain := New(Options{})
	list = attachmentProviders(nil)
	first := plain.Select(list, withAttachment("x-user", "", "same-argument"))
	for range 100 {
		assert.Same(t, first, plain.Select(list, withAttachment("x-user", "", "same-argument")))
	}
}
