package nacosdiscovery

import (
	"net"
	"strconv"
	"testing"
)

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
		}
		if !sameUsable(list, list) {
			t.Fatal("a list differs from itself")
		}
	})
}
