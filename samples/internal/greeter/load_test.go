package greeter

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/client"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/global"
	"dubbo.apache.org/dubbo-go/v3/protocol"
	"dubbo.apache.org/dubbo-go/v3/server"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbogo-lb/lb/extension"
	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
	_ "github.com/dubbogo-lb/lb/samples/internal/app" // dubbo-go's protocol, proxy and cluster extensions
)

// TestProviderLoadRoundTripOverTriple proves the way a load report takes
// with dubbo-go v3.3.2's triple: a provider with the lbload filter answers
// a call that carries lb_adaptive with two result attachments, which
// dubbo-go's triple server sends as response trailers; the consumer's
// lbactive filter asks (lb.load-report=true), lends the invocation a
// trailer header, and stores the report on the provider's statistics.
// Real dubbo-go server and client over loopback TCP, in one process.
func TestProviderLoadRoundTripOverTriple(t *testing.T) {
	ctx, port := serve(t)

	cli, err := client.NewClient()
	require.NoError(t, err)
	g, err := NewGreeter(cli,
		client.WithURL(fmt.Sprintf("tri://127.0.0.1:%d", port)),
		client.WithFilter(filter.Name),
		client.WithParam(filter.LoadReportKey, "true"),
	)
	require.NoError(t, err)

	var got loadreport.Report
	var u *common.URL
	deadline := time.Now().Add(2 * time.Minute)
	// The capacity is read from the provider URL on the first call and
	// reported from the next sample on (100 ms).
	for got.Has&loadreport.HasCapacity == 0 || got.Has&loadreport.HasTime == 0 {
		require.True(t, time.Now().Before(deadline), "no load report after 2 minutes")
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := g.Hello(cctx, wrapperspb.String("k"))
		ccancel()
		if err != nil {
			time.Sleep(100 * time.Millisecond) // the server may not listen yet
			continue
		}
		rpcstatus.Range(func(k *common.URL, p *rpcstatus.Provider) bool {
			if k.Port == strconv.Itoa(port) {
				u, got = k, p.Load().Report()
			}
			return true
		})
	}
	require.NotNil(t, u)
	require.Equal(t, 64.0, got.Capacity, "the provider URL's lb.capacity")
	require.InDelta(t, time.Now().UnixMilli(), got.TimeMs, float64(time.Minute.Milliseconds()))
	require.True(t, got.Has&loadreport.HasCPU != 0)
}

// serve returns the triple provider of the service that the tests of this
// package share (dubbo-go's triple server defines a service once per
// process), started on the first call on a free loopback port with the
// lbload filter and the provider param lb.capacity=64: the context it
// serves under (never cancelled) and its port.
func serve(t *testing.T) (context.Context, int) {
	shared.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		shared.port = ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())

		app := global.DefaultApplicationConfig()
		app.Name = "greeter-test"
		app.MetadataType = "remote"
		srv, err := server.NewServer(server.SetServerApplication(app), server.WithServerProtocol(
			protocol.WithTriple(), protocol.WithIp("127.0.0.1"), protocol.WithPort(shared.port)),
			server.WithServerFilter(extension.LoadFilterName))
		require.NoError(t, err)
		lat, err := ParseLatency("1ms")
		require.NoError(t, err)
		b, err := NewBackend("p", lat, 0)
		require.NoError(t, err)
		require.NoError(t, Register(srv, b, server.WithParam("lb.capacity", "64")))
		go func() { _ = srv.ServeContext(context.Background()) }()
	})
	require.NotZero(t, shared.port, "the shared provider did not start")
	return context.Background(), shared.port
}

var shared struct {
	once sync.Once
	port int
}
