package nacosdiscovery

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/global"
	nacosconst "github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
)

// The consumer finds a provider registered in a namespace of a Nacos with
// authentication on, through its own Nacos client with the registry's
// credentials; the Open API reads of its resync log in and read that
// namespace (the public one, read with the same login, has no provider).
func providersBehindALoginInANamespace(t tb) {
	const a = "127.0.0.1:20001"
	s := authNacos(t)
	group := groupOf(t)
	s.register(t, group, 20001)
	_, f := follow(t, Wrap(s.registry(t, group, "auth-"+group), Options{}).(*subscriber), a)
	api := f.src.api.(*openAPI)
	if api.namespace != s.namespace || api.username != s.username {
		t.Fatalf("the feed reads namespace %q as %q, want %q as %q", api.namespace, api.username, s.namespace, s.username)
	}
	list, err := api.instances(service, group)
	if err != nil {
		t.Fatalf("the resync's read of the server: %v", err)
	}
	if got := hosts(list); !slices.Equal(got, []string{a}) {
		t.Fatalf("the resync's read of the server gives %v, want %s", got, a)
	}
	api.mu.Lock()
	token, ttl := api.token, time.Until(api.expires)
	api.mu.Unlock()
	if token == "" || ttl <= 0 {
		t.Fatalf("after a read the token is %q, valid for %v: the login did not take", token, ttl)
	}
	t.Logf("the resync logged in (token valid for %v more) and read %v in namespace %s", ttl.Round(time.Second), hosts(list), s.namespace)

	public := &openAPI{bases: api.bases, username: api.username, password: api.password, http: api.http}
	if list, err := public.instances(service, group); err != nil || len(list) != 0 {
		t.Fatalf("the public namespace, same group: %v, %v; want no instance", hosts(list), err)
	}

	wrong := &openAPI{bases: api.bases, namespace: api.namespace, username: api.username, password: s.password + "-wrong", http: api.http}
	if _, err := wrong.instances(service, group); err == nil || !strings.Contains(err.Error(), "login as") {
		t.Fatalf("a read with a wrong password: %v, want a failed login", err)
	}
}

func hosts(list []model.Instance) []string {
	out := make([]string, 0, len(list))
	for _, in := range list {
		out = append(out, hostOf(in))
	}
	slices.Sort(out)
	return out
}

// CheckLogin against a real Nacos with authentication on: the right
// credentials pass; a wrong password, an unknown user and no user at all
// are each an error that names the server and says what is wrong.
func TestNacosAuthCheckLogin(t *testing.T) {
	needNacos(t, envNacosAuth)
	s := authNacos(t)
	reg := func(user, password string) *global.RegistryConfig {
		return &global.RegistryConfig{Protocol: Protocol, Address: s.addr(), Namespace: s.namespace, Username: user, Password: password}
	}
	if err := CheckLogin(reg(s.username, s.password)); err != nil {
		t.Fatalf("the right credentials: %v", err)
	}
	for name, tc := range map[string]struct {
		reg  *global.RegistryConfig
		want string
	}{
		"wrong password": {reg(s.username, s.password+"-wrong"), `login as "` + s.username + `" failed`},
		"unknown user":   {reg("no-such-user", s.password), `login as "no-such-user" failed`},
		"no user":        {reg("", ""), "requires a login"},
	} {
		err := CheckLogin(tc.reg)
		if err == nil || !strings.Contains(err.Error(), s.addr()) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming %s and saying %q", name, err, s.addr(), tc.want)
			continue
		}
		if strings.Contains(err.Error(), s.password) {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// CheckLogin against a Nacos with authentication off passes, with
// credentials or without: the server needs none.
func TestCheckLoginWithoutAuthentication(t *testing.T) {
	needNacos(t, envNacos)
	s := plainNacos(t)
	for _, user := range []string{"", "nacos"} {
		if err := CheckLogin(&global.RegistryConfig{Protocol: Protocol, Address: s.addr(), Username: user, Password: "any"}); err != nil {
			t.Errorf("user %q: %v", user, err)
		}
	}
}

// fakeNacos answers the Open API calls of openAPI as configured, and
// counts the logins.
type fakeNacos struct {
	v3Login  int // status of POST /v3/auth/user/login; 200 gives a token
	v1Login  int
	list     int // status of GET /v1/ns/instance/list
	listBusy int // the first listBusy list reads answer 503 instead
	mu       sync.Mutex
	logins   []string          // paths, in order
	tokens   []string          // accessToken header of each list read
	inURL    []string          // URLs that carried an accessToken
	lastList map[string]string // query of the last list read
}

func (f *fakeNacos) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Query().Has("accessToken") {
		f.inURL = append(f.inURL, r.URL.String())
	}
	answer := func(code int, body string) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
	switch r.URL.Path {
	case "/nacos/v3/auth/user/login", "/nacos/v1/auth/login":
		f.logins = append(f.logins, r.URL.Path)
		code := f.v3Login
		if strings.HasPrefix(r.URL.Path, "/nacos/v1") {
			code = f.v1Login
		}
		if code == http.StatusOK && (r.FormValue("username") != "u" || r.FormValue("password") != "p") {
			code = http.StatusInternalServerError // as Nacos 3 answers a wrong password
		}
		if code != http.StatusOK {
			answer(code, `{"status":`+strconv.Itoa(code)+`}`)
			return
		}
		answer(code, `{"accessToken":"token-`+string(rune('0'+len(f.logins)))+`","tokenTtl":18000}`)
	case "/nacos/v1/ns/instance/list":
		f.tokens = append(f.tokens, r.Header.Get("accessToken"))
		f.lastList = map[string]string{"namespaceId": r.FormValue("namespaceId"), "groupName": r.FormValue("groupName")}
		if f.listBusy > 0 {
			f.listBusy--
			answer(http.StatusServiceUnavailable, "")
			return
		}
		answer(f.list, `{"hosts":[]}`)
	default:
		answer(http.StatusNotFound, "")
	}
}

func fakeAPI(t *testing.T, f *fakeNacos, user string) *openAPI {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	a := newOpenAPI(nil, nacosconst.ClientConfig{NamespaceId: "ns", Username: user, Password: "p", TimeoutMs: 5000}, nil)
	a.bases = []string{srv.URL + "/nacos"}
	return a
}

// openAPI logs in through the v3 API, or the v1 API where there is no v3
// (Nacos 2), reads with the token and namespace, keeps the token while it
// is valid, and logs in again once the server refuses it.
func TestOpenAPILogin(t *testing.T) {
	for _, tc := range []struct {
		name       string
		v3         int
		wantLogins []string
	}{
		{"Nacos 3", http.StatusOK, []string{"/nacos/v3/auth/user/login"}},
		{"Nacos 2", http.StatusNotFound, []string{"/nacos/v3/auth/user/login", "/nacos/v1/auth/login"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeNacos{v3Login: tc.v3, v1Login: http.StatusOK, list: http.StatusOK}
			a := fakeAPI(t, f, "u")
			for range 2 {
				if _, err := a.instances(service, "G"); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(f.logins, tc.wantLogins) {
				t.Errorf("logins %v, want %v (one login for both reads)", f.logins, tc.wantLogins)
			}
			token := "token-" + string(rune('0'+len(tc.wantLogins)))
			if !slices.Equal(f.tokens, []string{token, token}) || f.lastList["namespaceId"] != "ns" || f.lastList["groupName"] != "G" {
				t.Errorf("the reads sent tokens %v and %v, want %s twice, namespace ns, group G", f.tokens, f.lastList, token)
			}
			if len(f.inURL) != 0 {
				t.Errorf("the token went in URLs: %v", f.inURL)
			}

			f.list = http.StatusForbidden // e.g. Nacos restarted with another secret key
			if _, err := a.instances(service, "G"); !denied(err) {
				t.Fatalf("a read the server refuses: %v, want a 403", err)
			}
			f.list = http.StatusOK
			if _, err := a.instances(service, "G"); err != nil {
				t.Fatal(err)
			}
			if n := len(f.logins); n != 2*len(tc.wantLogins) {
				t.Errorf("%d logins after the token was refused, want %d: a new login", n, 2*len(tc.wantLogins))
			}
		})
	}
}

// The verdicts of CheckLogin on the answers a server can give.
func TestCheckLoginVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		user       string
		v3, list   int
		wantErr    string // "": no error
		wantLogins int
	}{
		{"login taken", "u", http.StatusOK, http.StatusForbidden, "", 1},
		{"login refused, login required", "u", http.StatusInternalServerError, http.StatusForbidden, `login as "u" failed (500 Internal Server Error), and the server requires a login`, 1},
		{"login refused, none required", "u", http.StatusInternalServerError, http.StatusOK, "", 1},
		{"login refused, cannot tell", "u", http.StatusInternalServerError, http.StatusGone, "", 1},
		{"no user, login required", "", http.StatusOK, http.StatusUnauthorized, "requires a login (401 Unauthorized without one)", 0},
		{"no user, none required", "", http.StatusOK, http.StatusOK, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeNacos{v3Login: tc.v3, v1Login: http.StatusOK, list: tc.list}
			a := fakeAPI(t, f, tc.user)
			decided, err := a.checkLogin(a.bases[0])
			switch {
			case tc.wantErr == "" && err != nil, tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("checkLogin: %v, want %q", err, tc.wantErr)
			case tc.name == "login refused, cannot tell" && decided:
				t.Error("a server that answers neither way decided the check")
			case len(f.logins) != tc.wantLogins:
				t.Errorf("%d logins, want %d", len(f.logins), tc.wantLogins)
			}
		})
	}

	// No server answers: the check cannot tell, and lets the consumer start.
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	if err := CheckLogin(&global.RegistryConfig{Protocol: Protocol, Address: addr, Username: "u", Password: "p", Timeout: "2s"}); err != nil {
		t.Errorf("a server that does not answer: %v, want nil", err)
	}
	if err := CheckLogin(&global.RegistryConfig{Protocol: Protocol, Address: "no-port"}); err == nil {
		t.Error("an address without a port: no error")
	}
}

// A server too busy to tell in one round is asked again, 1 s and then 2 s
// later, before the consumer is let start unchecked.
func TestCheckLoginAsksABusyServerAgain(t *testing.T) {
	for _, tc := range []struct {
		busy      int
		wantErr   bool
		wantWaits []time.Duration
	}{
		{0, true, nil},
		{2, true, []time.Duration{time.Second, 2 * time.Second}},
		{3, false, []time.Duration{time.Second, 2 * time.Second}},
	} {
		f := &fakeNacos{v3Login: http.StatusOK, list: http.StatusForbidden, listBusy: tc.busy}
		a := fakeAPI(t, f, "u")
		a.password = "wrong"
		var waits []time.Duration
		err := a.checkLogins(func(d time.Duration) { waits = append(waits, d) })
		if (err != nil) != tc.wantErr || !slices.Equal(waits, tc.wantWaits) {
			t.Errorf("%d busy answers: %v after waits %v; want an error %v after %v", tc.busy, err, waits, tc.wantErr, tc.wantWaits)
		}
	}
}

// A registry address that lists a Nacos cluster (host:port,host:port)
// gives the Open API every node, in order, and a read or a login check
// goes on to the next node when one does not answer (a node killed: its
// port refuses the connection).
func TestOpenAPIGoesOnToTheNextNodeOfACluster(t *testing.T) {
	f := &fakeNacos{v3Login: http.StatusOK, list: http.StatusOK}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close() // nothing listens there any more
	live := strings.TrimPrefix(srv.URL, "http://")
	reg := &global.RegistryConfig{Protocol: Protocol, Address: deadAddr + "," + live, Username: "u", Password: "p"}

	u, err := nacosURL(reg)
	if err != nil {
		t.Fatal(err)
	}
	servers, config, tc, err := nacosConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	a := newOpenAPI(servers, config, tc)
	if want := []string{"http://" + deadAddr + "/nacos", srv.URL + "/nacos"}; !slices.Equal(a.bases, want) {
		t.Fatalf("Open API bases %v, want %v", a.bases, want)
	}
	list, err := a.instances("svc", "G")
	if err != nil || len(list) != 0 {
		t.Fatalf("instances: %v, %v; want the live node's empty list", list, err)
	}
	if f.lastList["groupName"] != "G" || len(f.tokens) != 1 || f.tokens[0] == "" {
		t.Errorf("the live node saw reads %v with tokens %v; want one read of group G, logged in", f.lastList, f.tokens)
	}
	if err := CheckLogin(reg); err != nil {
		t.Errorf("CheckLogin with the first node down: %v", err)
	}
}
