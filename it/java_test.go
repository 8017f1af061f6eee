package it

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	// The dubbo-go parts an in-process client over a direct triple URL needs.
	"dubbo.apache.org/dubbo-go/v3/client"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/cluster/failover"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/router/condition"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dubboext "dubbo.apache.org/dubbo-go/v3/common/extension"
	dubbofilter "dubbo.apache.org/dubbo-go/v3/filter"
	_ "dubbo.apache.org/dubbo-go/v3/filter/graceful_shutdown"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/triple"
	_ "dubbo.apache.org/dubbo-go/v3/proxy/proxy_factory"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// javaWarmup is the warmup of a provider whose ramp a test checks (the
// Go ramps use it too: TestWarmupRampsUpANewProvider, at 30 s, had too few
// calls under load for any window to tell): a JVM on a busy machine takes 10 to
// 20 s from its timestamp to its registration (seen: 20.7 s on a fresh
// machine compiling beside it, found 24.5 s into the ramp), and the ramp
// must still have windows far enough below full weight to be told from
// it (checkRamp). Found 24.5 s into a 60 s ramp, beside 700 of 1500, no
// window was: 35 % ± 11.9 against 53 % at full weight. Found 40 s into
// 90 s, the first windows still are.
const javaWarmup = 90 * time.Second

// A fleet of dubbo-go and Dubbo Java providers, as the sample consumer
// sees it through Nacos with this module's balancers: weights 1:3 hold in
// both directions across the two languages (a Java provider registers the
// Nacos instance weight 1.0 and dubbo-go 100; interface-level discovery
// reads the metadata weight only); ringhash keeps every key on one
// provider, Java or Go, across consumer processes; a Java provider started
// later ramps up along the warmup that its millisecond timestamp and
// warmup describe; and no call fails.
func TestJavaMixedFleet(t *testing.T) {
	parallelJVM(t) // schedule_test.go
	e := setup(t)
	needJava(t)
	ps := []*provider{
		e.startProvider(t, providerSpec{name: "go100", weight: 100}),
		e.startProvider(t, providerSpec{name: "java300", weight: 300, java: true}),
		e.startProvider(t, providerSpec{name: "go300", weight: 300}),
		e.startProvider(t, providerSpec{name: "java100", weight: 100, java: true}),
	}
	for i, in := range e.waitRegistered(t, ps...) {
		checkJavaInstance(t, ps[i], in)
	}

	// The ring is measured while the weights are: its consumer makes its
	// 1000 calls and exits.
	ring := e.startConsumer(t, "ringhash", ringArgs(len(ps))...)
	cs := e.startConsumers(t, len(ps), specsFor(balancers(t, "swrr", "warmrandom"), pacedArgs...)...)
	for _, c := range cs {
		c.until(t, reactDeadline, "reaching every provider", func(r report) bool {
			return all(r, "go100", "java300", "go300", "java100")
		})
		m := c.collectCallsTo(t, shareCalls, "go100", "java300", "go300", "java100")
		for _, p := range ps {
			shareOf(t, c.name+": share of "+p.spec.name+" (weights 100:300:300:100)", m, p.spec.name, 100*float64(p.spec.weight)/800)
		}
		shareControl(t, "unweighted_"+c.balancer, c.name+": share of java300 (weights 100:300:300:100)", m, "java300", 25)
		t.Logf("%s: Go %.1f%%, Java %.1f%%", c.name, m.share("go100")+m.share("go300"), m.share("java300")+m.share("java100"))
	}

	first := ringOwners(t, ring, ring.result(t, 2*time.Minute))
	langs := map[string]int{}
	for _, p := range first {
		langs[p[:strings.IndexAny(p, "0123456789")]]++
	}
	// Both languages own keys; 20 keys miss all the providers of one
	// language with probability about 2 × 2^-20 on an even ring.
	if langs["go"] == 0 || langs["java"] == 0 {
		t.Errorf("ringhash: 20 keys went to %v: want keys on Go and on Java providers", first)
	}
	ring = e.startConsumer(t, "ringhash", ringArgs(len(ps))...) // a new consumer process
	if second := ringOwners(t, ring, ring.result(t, 2*time.Minute)); !maps.Equal(first, second) {
		t.Errorf("ringhash: keys moved after the consumer restarted:\nbefore %v\nafter  %v", first, second)
	} else {
		t.Logf("ringhash: 20 keys on the same providers in two consumer processes (keys per language %v)", langs)
	}

	// A Java provider of weight 800 joins: it ramps up to half the calls
	// along javaWarmup.
	const warmup = javaWarmup
	fresh := e.startProvider(t, providerSpec{name: "javanew", weight: 800, warmup: warmup, java: true})
	insts := e.waitRegistered(t, append(ps, fresh)...)
	checkJavaInstance(t, fresh, insts[len(ps)])
	md := insts[len(ps)].Metadata
	ts, err := strconv.ParseInt(md["timestamp"], 10, 64)
	if want := strconv.FormatInt(warmup.Milliseconds(), 10); err != nil || ts < 1e11 || md["warmup"] != want {
		t.Fatalf("new Java provider's metadata: timestamp %q, warmup %q; want Unix milliseconds and %s", md["timestamp"], md["warmup"], want)
	}
	started := time.UnixMilli(ts)
	t.Logf("new Java provider: timestamp %s, registered %.1fs later", started.Format("15:04:05.000"), time.Since(started).Seconds())
	for _, c := range cs {
		checkRamp(t, c, fresh, started, warmup, 800, 800) // beside 800 in all
	}
	for _, c := range cs {
		noErrors(t, c, c.finish(t))
	}
}

// checkJavaInstance checks what provider p registered in Nacos, in: the
// address 127.0.0.1 (Dubbo Java would register the machine's first other
// address; it/javaprovider makes it register loopback) and, for a Java
// provider, what it/javaprovider/README.md says a Java provider registers:
// Nacos instance weight 1.0, and in the metadata its weight, warmup in
// milliseconds, a timestamp in milliseconds and release 3.3.6.
func checkJavaInstance(t *testing.T, p *provider, in instance) {
	t.Helper()
	if in.IP != "127.0.0.1" {
		t.Errorf("%s registered %s:%d, want 127.0.0.1", p.name, in.IP, in.Port)
	}
	if !p.spec.java {
		return
	}
	md := in.Metadata
	ts, err := strconv.ParseInt(md["timestamp"], 10, 64)
	switch {
	case in.Weight != 1:
		t.Errorf("%s: Nacos instance weight %v, want Dubbo Java's 1", p.name, in.Weight)
	case md["weight"] != strconv.Itoa(p.spec.weight):
		t.Errorf("%s: metadata weight %q, want %d", p.name, md["weight"], p.spec.weight)
	case md["warmup"] != strconv.FormatInt(p.spec.warmup.Milliseconds(), 10):
		t.Errorf("%s: metadata warmup %q, want %d (ms)", p.name, md["warmup"], p.spec.warmup.Milliseconds())
	case err != nil || time.Since(time.UnixMilli(ts)).Abs() > 10*time.Minute:
		t.Errorf("%s: metadata timestamp %q, want Unix milliseconds of a moment ago", p.name, md["timestamp"])
	case md["release"] != "3.3.6":
		t.Errorf("%s: metadata release %q, want 3.3.6", p.name, md["release"])
	}
}

// A Java provider sixty times slower than the others, one of them a Java
// provider too, gets a small share under the latency-aware balancers,
// bounded by the latencies each consumer measured (as
// TestLatencyAwareBalancersAvoidASlowProvider bounds it, with the same
// timers far apart); dubbo-go's random, the negative control, fails that
// bound; no call fails.
func TestJavaSlowProviderAvoided(t *testing.T) {
	e := setup(t)
	needJava(t)
	ps := []*provider{
		e.startProvider(t, providerSpec{name: "fast1", latency: "5ms"}),
		e.startProvider(t, providerSpec{name: "fast2", latency: "5ms", java: true}),
		e.startProvider(t, providerSpec{name: "slow", latency: slowLatency, java: true}),
	}
	for i, in := range e.waitRegistered(t, ps...) {
		checkJavaInstance(t, ps[i], in)
	}
	specs := append(specsFor(balancers(t, "lalb", "rtadaptive"), awareArgs...),
		consumerSpec{balancer: "random", args: blindArgs})
	cs := e.startConsumers(t, len(ps), specs...)
	measured := map[*consumer]report{}
	for _, c := range cs {
		c.collectCalls(t, 500) // adaptation
		if c.balancer == "random" {
			measured[c] = c.collectCalls(t, shareCalls)
		} else {
			measured[c] = collectLatencyAware(t, c)
		}
		t.Logf("%s: %v; %v", c.name, measured[c], latencies(measured[c]))
	}
	for _, c := range cs {
		noErrors(t, c, c.finish(t))
		if c.balancer == "random" {
			checkSlowMean(t, c.balancer, measured[c])
			t.Run("negative_control_random", func(t *testing.T) { checkSlowControl(t, c.balancer, measured[c]) })
		} else {
			checkSlowShare(t, c.balancer, measured[c])
		}
	}
}

// A Dubbo Java provider answers a call that carries the attachment
// lb_adaptive with its clock and load, "curTime:<Unix ms>,load:<load
// average × 100 / CPUs>", in one response trailer named lb_adaptive (Dubbo
// 3.3's ProfilerServerFilter), and a call without it with no such trailer.
// A dubbo-go v3.3.2 consumer reaches that trailer only through the
// invocation attribute response-trailer, which client.WithResponseTrailer
// or a filter's Invoke sets: the Result's attachments, all that a filter's
// OnResponse is given otherwise, do not hold it.
func TestJavaProviderReportsLoadInATrailer(t *testing.T) {
	parallelJVM(t) // schedule_test.go
	e := setup(t)
	needJava(t)
	p := e.startProvider(t, providerSpec{name: "jload", java: true})
	e.waitRegistered(t, p)

	probe := new(trailerProbe)
	dubboext.SetFilter("it-trailer-probe", func() dubbofilter.Filter { return probe })
	cli, err := client.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	// With its method names, the client calls in IDL mode, as the
	// sample consumer does (samples/internal/greeter.ClientInfo).
	info := &client.ClientInfo{InterfaceName: serviceInterface, MethodNames: []string{"Hello"},
		ConnectionInjectFunc: func(any, *client.Connection) {}}
	conn, err := cli.DialWithInfo(serviceInterface, info, client.WithURL(fmt.Sprintf("tri://127.0.0.1:%d", p.spec.port)),
		client.WithProtocolTriple(), client.WithFilter("it-trailer-probe"), client.WithRequestTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	call := func(attachments map[string]any) (trailer http.Header) {
		t.Helper()
		ctx := context.Background()
		if attachments != nil {
			ctx = context.WithValue(ctx, constant.AttachmentKey, attachments)
		}
		resp := new(wrapperspb.StringValue)
		if err := conn.CallUnary(ctx, []any{wrapperspb.String("k")}, resp, "Hello", client.WithResponseTrailer(&trailer)); err != nil {
			t.Fatalf("call with attachments %v: %v", attachments, err)
		}
		if resp.GetValue() != "jload" {
			t.Fatalf("reply %q, want jload", resp.GetValue())
		}
		return trailer
	}

	if tr := call(nil); tr.Get("lb_adaptive") != "" {
		t.Errorf("a call without lb_adaptive got the trailer lb_adaptive %q", tr.Get("lb_adaptive"))
	}
	before := time.Now()
	tr := call(map[string]any{"lb_adaptive": "true"})
	got := tr.Get("lb_adaptive")
	m := regexp.MustCompile(`^curTime:(\d+),load:(-?[0-9.]+(?:E-?\d+)?)$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("trailer lb_adaptive %q (trailers %v), want curTime:<ms>,load:<load>", got, tr)
	}
	curTime, _ := strconv.ParseInt(m[1], 10, 64)
	load, err := strconv.ParseFloat(m[2], 64)
	if at := time.UnixMilli(curTime); at.Before(before.Add(-time.Minute)) || at.After(time.Now().Add(time.Minute)) || err != nil || load < 0 {
		t.Errorf("trailer lb_adaptive %q: curTime %v not a moment ago, or load %v (%v) not a non-negative number", got, at, load, err)
	}
	t.Logf("trailer lb_adaptive: %s (trailers %v)", got, tr)

	probe.mu.Lock()
	defer probe.mu.Unlock()
	if probe.calls != 2 {
		t.Fatalf("the probe filter saw %d calls, want 2", probe.calls)
	}
	if v, ok := probe.attachment, probe.inAttachments; ok {
		t.Errorf("the Result's attachments hold lb_adaptive %v: dubbo-go copies trailers there now; update the finding in it/javaprovider/README.md", v)
	}
	if probe.trailer != got {
		t.Errorf("the filter's own response-trailer attribute holds lb_adaptive %q, want %q", probe.trailer, got)
	}
}

// serviceInterface is the greeter's interface name.
const serviceInterface = "org.dubbogo.lb.samples.Greeter"

// trailerProbe is a consumer filter that records, for the last call, what
// its OnResponse finds of lb_adaptive in the Result's attachments and in
// the response trailer, which it asks for in Invoke through the invocation
// attribute response-trailer unless the caller already did.
type trailerProbe struct {
	mu            sync.Mutex
	calls         int
	attachment    any
	inAttachments bool
	trailer       string
}

func (p *trailerProbe) Invoke(ctx context.Context, invoker base.Invoker, inv base.Invocation) result.Result {
	if _, ok := inv.GetAttribute(constant.ResponseTrailerKey); !ok {
		inv.SetAttribute(constant.ResponseTrailerKey, new(http.Header))
	}
	return invoker.Invoke(ctx, inv)
}

func (p *trailerProbe) OnResponse(_ context.Context, res result.Result, _ base.Invoker, inv base.Invocation) result.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.attachment, p.inAttachments = res.Attachments()["lb_adaptive"]
	p.trailer = ""
	if raw, ok := inv.GetAttribute(constant.ResponseTrailerKey); ok {
		if h, ok := raw.(*http.Header); ok && h != nil {
			p.trailer = h.Get("lb_adaptive")
		}
	}
	return res
}
