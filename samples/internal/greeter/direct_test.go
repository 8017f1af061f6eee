package greeter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/client"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// TestDirectURLNamingAnUnknownBalancerFallsBack: a reference with a direct
// URL (reference url tri://host:port?loadbalance=...) is referred with the
// URL's own protocol, not through dubbo-go's "filter" protocol that the
// registry directory uses, and its cluster looks the name up with MustGet
// all the same (a panic on an unknown name). With the guard, the calls
// succeed on the fallback and one WARN names the provider, the service and
// the name, for the service and the method level.
func TestDirectURLNamingAnUnknownBalancerFallsBack(t *testing.T) {
	mu := make(chan struct{}, 1) // guards lines
	var lines []string
	defer lblog.Capture(func(l string) {
		mu <- struct{}{}
		lines = append(lines, l)
		<-mu
	})()
	ctx, port := serve(t)
	location := fmt.Sprintf("127.0.0.1:%d", port)

	cli, err := client.NewClient()
	require.NoError(t, err)
	var greeters []Greeter
	for _, q := range []string{"loadbalance=direct-typo", "methods.Hello.loadbalance=direct-method-typo"} {
		g, err := NewGreeter(cli, client.WithURL("tri://"+location+"?"+q))
		require.NoError(t, err)
		greeters = append(greeters, g)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, g := range greeters {
		for ok := 0; ok < 3; {
			require.True(t, time.Now().Before(deadline), "no successful call after 2 minutes")
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			var err error
			require.NotPanics(t, func() { _, err = g.Hello(cctx, wrapperspb.String("k")) })
			ccancel()
			if err != nil {
				time.Sleep(100 * time.Millisecond) // the server may not listen yet
				continue
			}
			ok++
		}
	}
	_, hosts := dgext.GetProtocol("tri").(base.HTTPHandlerHost)
	assert.True(t, hosts, "triple, wrapped, still hosts HTTP handlers")

	mu <- struct{}{}
	defer func() { <-mu }()
	var warned []string
	for _, l := range lines {
		if strings.Contains(l, "which this consumer does not know") {
			warned = append(warned, l)
		}
	}
	require.Len(t, warned, 2, "%q", lines)
	assert.Contains(t, warned[0], `provider `+location+` names load balancer "direct-typo" for service `+Interface)
	assert.Contains(t, warned[1], `names load balancer "direct-method-typo" for method Hello of service `+Interface)
	assert.Contains(t, warned[0], `using "random"`)
}
