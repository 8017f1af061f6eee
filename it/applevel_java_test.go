package it

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// javaAppService is the Nacos service of it/javaprovider's application,
// where Dubbo Java registers it at application level.
const javaAppService = "dubbogo-lb-java-provider"

// appServiceOf returns the Nacos service of p's application.
func appServiceOf(p *provider) string {
	if p.spec.java {
		return javaAppService
	}
	return appService
}

// startBothLevels starts providers registering at both levels, Dubbo
// Java's default (a Java provider's own default, -register-mode all; a Go
// one's -registry-type all), each once the ones before are registered at
// both levels and the greeter's interface-to-application mapping names
// their applications (startProvider), beside the running ones; it returns
// the application-level instances of them all, in order.
func (e *env) startBothLevels(t *testing.T, running []*provider, specs ...providerSpec) ([]*provider, []instance) {
	t.Helper()
	ps := running
	for _, s := range specs {
		if !s.java {
			s.args = append(s.args, "-registry-type", bothLevels.typ)
		}
		ps = append(ps, e.startProvider(t, s))
		e.waitAppRegistered(t, ps...)
		e.waitRegistered(t, ps...)
	}
	return ps, e.waitAppRegistered(t, ps...)
}

// waitAppRegistered waits until exactly the providers ps are registered,
// enabled and healthy at application level, each in its application's
// service, and returns their instances in the order of ps.
func (e *env) waitAppRegistered(t *testing.T, ps ...*provider) []instance {
	t.Helper()
	out := make([]instance, len(ps))
	for _, service := range []string{appService, javaAppService} {
		var of []*provider
		for _, p := range ps {
			if appServiceOf(p) == service {
				of = append(of, p)
			}
		}
		if len(of) == 0 {
			continue
		}
		for _, in := range e.waitRegisteredIn(t, service, of...) {
			out[slices.IndexFunc(ps, func(p *provider) bool { return p.spec.port == in.Port })] = in
		}
	}
	return out
}

// waitMapping waits until the greeter's interface-to-application mapping
// in Nacos's configuration store (data ID the interface, group mapping;
// Dubbo Java and dubbo-go keep it alike) names app.
func (e *env) waitMapping(t *testing.T, app string) {
	t.Helper()
	q := url.Values{"dataId": {serviceInterface}, "group": {"mapping"}}
	deadline := time.Now().Add(reactDeadline)
	var apps []string
	for {
		if err := e.scope(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient.Get("http://" + e.nacos + "/nacos/v1/cs/configs?" + q.Encode())
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				apps = strings.Split(strings.TrimSpace(string(body)), ",")
				if slices.Contains(apps, app) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Nacos: the mapping of %s names %v after %v, not %s", serviceInterface, apps, reactDeadline, app)
		}
		time.Sleep(200 * time.Millisecond) // polling Nacos
	}
}

// checkJavaAppInstance checks what the Java provider p registered at
// application level, in (it/javaprovider/README.md): 127.0.0.1, Nacos
// instance weight 1.0, a timestamp in Unix milliseconds of a moment ago,
// and its metadata where storage says: local, its metadata service on its
// triple port; remote, the metadata report.
func checkJavaAppInstance(t *testing.T, p *provider, in instance, storage string) {
	t.Helper()
	md := in.Metadata
	ts, err := strconv.ParseInt(md["timestamp"], 10, 64)
	var ms map[string]string
	_ = json.Unmarshal([]byte(md["dubbo.metadata-service.url-params"]), &ms)
	switch {
	case in.IP != "127.0.0.1":
		t.Errorf("%s registered %s:%d at application level, want 127.0.0.1", p.name, in.IP, in.Port)
	case in.Weight != 1:
		t.Errorf("%s: Nacos instance weight %v at application level, want Dubbo Java's 1", p.name, in.Weight)
	case err != nil || ts < 1e11 || time.Since(time.UnixMilli(ts)).Abs() > 10*time.Minute:
		t.Errorf("%s: application-level timestamp %q, want Unix milliseconds of a moment ago", p.name, md["timestamp"])
	case md["dubbo.metadata.storage-type"] != storage:
		t.Errorf("%s: metadata storage type %q, want %s", p.name, md["dubbo.metadata.storage-type"], storage)
	case storage == "local" && (ms["protocol"] != "tri" || ms["port"] != strconv.Itoa(p.spec.port) || md["meta-v"] != "2.0.0"):
		t.Errorf("%s: metadata service %v (meta-v %q), want triple on port %d, version 2.0.0", p.name, ms, md["meta-v"], p.spec.port)
	}
}

// A fleet of dubbo-go and Dubbo Java providers registered at both levels
// (Java's default), found at application level by consumers of
// registry-type service and all, with this module's balancers: weights
// 1:3 hold in both directions across the two languages, whether a Java
// provider's parameters come from its metadata service (metadata-type
// local, Java's default) or from the Nacos metadata report (remote); a
// console edit of a Java instance's weight and a disable of another are
// followed; a Java provider started later ramps up along the warmup that
// its millisecond timestamp (in its instance's metadata only) describes;
// no call fails.
func TestApplicationLevelJavaMixedFleet(t *testing.T) {
	parallelJVM(t) // schedule_test.go
	e := setup(t)
	needJava(t)
	// One at a time (startBothLevels), local metadata (Java's default)
	// for java300, the Nacos metadata report for java100.
	ps, insts := e.startBothLevels(t, nil,
		providerSpec{name: "java300", weight: 300, java: true},
		providerSpec{name: "java100", weight: 100, java: true, args: []string{"-metadata-type", "remote"}},
		providerSpec{name: "go100", weight: 100},
		providerSpec{name: "go300", weight: 300},
	)
	java300, java100 := insts[0], insts[1]
	checkJavaAppInstance(t, ps[0], java300, "local")
	checkJavaAppInstance(t, ps[1], java100, "remote")

	// Both registry types, in parallel, on the application level.
	cs := e.startConsumers(t, 4,
		consumerSpec{balancer: "swrr", name: "swrr at service level", args: append([]string{"-registry-type", applicationLevel.typ}, pacedArgs...)},
		consumerSpec{balancer: "warmrandom", name: "warmrandom at both levels", args: append([]string{"-registry-type", bothLevels.typ}, pacedArgs...)},
	)
	weights := map[string]float64{"go100": 100, "java300": 300, "go300": 300, "java100": 100}
	for _, c := range cs {
		c.until(t, reactDeadline, "reaching every provider", func(r report) bool { return all(r, "go100", "java300", "go300", "java100") })
		m := c.collectCallsTo(t, shareCalls, "go100", "java300", "go300", "java100")
		for name, w := range weights {
			shareOf(t, c.name+": share of "+name+" (weights 100:300:300:100)", m, name, 100*w/800)
		}
		t.Logf("%s: Go %.1f%%, Java %.1f%%", c.name, m.share("go100")+m.share("go300"), m.share("java300")+m.share("java100"))
	}

	// java100's instance weight tripled in the console: 300 of 1000.
	changed := time.Now()
	e.console(t, javaAppService, java100, 3*java100.Weight, true)
	for _, c := range cs {
		followed(t, c, changed, "java100", 12.5, true)
		shareOf(t, c.name+": share of java100, its instance weight tripled (100:300:300:300)", c.collectCallsTo(t, shareCalls, "go100", "java300", "go300", "java100"), "java100", 30)
	}

	// java300 disabled: no call to it; go300 has 300 of 700.
	changed = time.Now()
	e.console(t, javaAppService, java300, java300.Weight, false)
	for _, c := range cs {
		shareOf(t, c.name+": share of go300, java300 disabled (100:300:300)", starved(t, c, changed, shareCalls, "java300", "go100", "go300", "java100"), "go300", 300.0/7)
	}

	// A Java provider of weight 800 joins: it ramps up to 800 of 1500
	// along its warmup, from the timestamp of its application-level
	// instance.
	const warmup = javaWarmup
	fresh := e.startProvider(t, providerSpec{name: "javanew", weight: 800, warmup: warmup, java: true})
	in := e.waitRegisteredIn(t, javaAppService, ps[1], fresh)[1] // java300 is disabled: the list leaves it out
	checkJavaAppInstance(t, fresh, in, "local")
	ts, _ := strconv.ParseInt(in.Metadata["timestamp"], 10, 64)
	started := time.UnixMilli(ts)
	t.Logf("new Java provider: timestamp %s, registered %.1fs later", started.Format("15:04:05.000"), time.Since(started).Seconds())
	for _, c := range cs {
		checkRamp(t, c, fresh, started, warmup, 800, 700) // beside 700 (java300 disabled)
	}
	for _, c := range cs {
		noErrors(t, c, c.finish(t))
	}
}
