package nacosdiscovery

import (
	"net"
	"strconv"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/warmup"
)

// checkFactor fails t unless the provider URL u carries a weight factor
// that the balancers' parser takes as it is.
func checkFactor(t *testing.T, u *common.URL) {
	t.Helper()
	raw := u.GetParam(urlparam.WeightFactorKey, "")
	if f, problem := warmup.ParseFactor(raw); raw == "" || problem != "" || f < 0 {
		t.Fatalf("URL %s: weight factor %q: %v, %s", u, raw, f, problem)
	}
}

// Any instance of an instance-list answer, with any service parameters,
// gives provider URLs that carry the provider's own weight parameter, a
// valid weight factor, and the instance's timestamp when the service has
// none.
func FuzzAppInstanceURL(f *testing.F) {
	f.Add([]byte(`{"hosts":[{"ip":"127.0.0.1","port":20001,"weight":0.5,"healthy":true,"enabled":true,"metadata":{"id":"127.0.0.1:20001","dubbo.endpoints":"[{\"port\":20001,\"protocol\":\"tri\"}]"}}]}`), "3", "dubbo-golang-3.3.2")
	f.Add([]byte(`{"hosts":[{"ip":"fd00::1","port":1,"weight":0,"healthy":true,"enabled":true,"metadata":{"dubbo.endpoints":"not json"}}]}`), "", "3.3.6")
	f.Add([]byte(`{"hosts":[{"ip":"h","port":2,"weight":1e308,"healthy":true,"enabled":true,"metadata":null}]}`), "x", "")
	f.Add([]byte(`{"hosts":[{"ip":"127.0.0.1","port":3,"weight":1,"healthy":true,"enabled":true,"metadata":{"timestamp":"1796099024580","dubbo.metadata.storage-type":"local"}}]}`), "300", "3.3.6")
	f.Add([]byte(`{"hosts":[{"ip":"127.0.0.1","port":4,"weight":1,"healthy":true,"enabled":true,"metadata":{"timestamp":"-1e99 x"}}]}`), "1", "3.3.6")
	f.Fuzz(func(t *testing.T, body []byte, weight, release string) {
		list, err := parseInstanceList(body)
		if err != nil {
			return
		}
		params := map[string]string{"release": release}
		if weight != "" {
			params["weight"] = weight
		}
		for _, in := range appInstances(app, "G", list) {
			for _, u := range in.ToURLs(serviceInfo(params)) {
				if got := u.GetParam("weight", ""); got != weight {
					t.Fatalf("URL %s: weight %q, want the provider's %q", u, got, weight)
				}
				// The service has no timestamp: the instance's is the URL's.
				if got, want := u.GetParam("timestamp", ""), in.GetMetadata()["timestamp"]; got != want {
					t.Fatalf("URL %s: timestamp %q, want the instance's %q", u, got, want)
				}
				checkFactor(t, u)
			}
		}
	})
}

// An instance-list answer of the server, whatever its bytes, gives a list
// or an error; every instance of a list gives a provider URL at its own
// address or an error; comparing lists never fails.
func FuzzInstanceList(f *testing.F) {
	f.Add([]byte(`{"name":"DEFAULT_GROUP@@s","hosts":[{"ip":"127.0.0.1","port":20001,"weight":2.0,"healthy":true,"enabled":true,"metadata":{"interface":"i","protocol":"tri","weight":"100"}}],"lastRefTime":1}`))
	f.Add([]byte(`{"hosts":[{"ip":"fd00::1","port":65535,"healthy":true,"enabled":true,"metadata":{"path":"/p","protocol":"tri"}},{"ip":"","port":0,"metadata":null}]}`))
	f.Add([]byte(`{"hosts":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		list, err := parseInstanceList(body)
		if err != nil {
			return
		}
		if list == nil {
			t.Fatal("a parsed list is nil")
		}
		for _, in := range list {
			u, err := providerURL(in)
			if err != nil {
				continue
			}
			if want := net.JoinHostPort(in.Ip, strconv.FormatUint(in.Port, 10)); u.Ip != in.Ip || u.Port != strconv.FormatUint(in.Port, 10) {
				t.Fatalf("instance %s gave the URL %s", want, u)
			}
			checkFactor(t, u)
		}
		if !sameUsable(list, list) {
			t.Fatal("a list differs from itself")
		}
	})
}
