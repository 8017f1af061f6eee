package lbname

import (
	"net/url"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common"
)

// FuzzBalancerNames reads the balancer names of provider URLs whose
// parameters come from the network (a Nacos instance's metadata): never a
// panic; Java's spelling is copied only where dubbo-go's is absent or
// empty, and
// once (the URL built twice compares equal); every name found is non-empty
// and comes from a loadbalance key.
func FuzzBalancerNames(f *testing.F) {
	for _, s := range [][4]string{
		{"Hello.loadbalance", "adaptive", "methods", "Hello"},
		{"methods.Hello.loadbalance", "swrr", "Hello.loadbalance", "random"},
		{".loadbalance", "x", "methods", ""},
		{"methods..loadbalance", "y", "loadbalance", ""},
		{"a.b.loadbalance", "z", "methods", "a.b,c"},
		{"loadbalance.loadbalance", "q", "methods.loadbalance", "r"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		q := url.Values{}
		q.Set(k1, v1)
		q.Set(k2, v2)
		build := func() *common.URL {
			return common.NewURLWithOptions(common.WithProtocol("tri"), common.WithIp("10.0.0.1"), common.WithPort("1"), common.WithParams(q))
		}
		u := build()
		before := u.GetParams()
		JavaMethodSpelling(u)
		for k, vs := range before {
			// An empty value counts as unset (urlparam: the first
			// non-empty spelling wins), so Java's may fill it.
			if got := u.GetParam(k, ""); len(vs) > 0 && vs[0] != "" && got != vs[0] {
				t.Fatalf("%s changed from %q to %q", k, vs[0], got)
			}
		}
		again := build()
		JavaMethodSpelling(again)
		JavaMethodSpelling(again)
		if !common.IsEquals(u, again) {
			t.Fatalf("not idempotent: %v vs %v", u, again)
		}
		for _, n := range Names(u) {
			key := "loadbalance"
			if n.Method != "" {
				key = "methods." + n.Method + ".loadbalance"
			}
			if n.Name == "" || u.GetParam(key, "") != n.Name {
				t.Fatalf("name %+v is not the URL's %s (%q)", n, key, u.GetParam(key, ""))
			}
		}
	})
}
