package it

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// envNacosAuth names a Nacos with authentication on (host:port of its
	// HTTP API), the two after it the user and password to log in with
	// (user default nacos, the admin that it/nacos.sh makes; the tests
	// create namespaces, which needs an admin); it/test.sh sets them.
	envNacosAuth         = "DUBBOGO_LB_NACOS_AUTH"
	envNacosAuthUsername = "DUBBOGO_LB_NACOS_AUTH_USERNAME"
	envNacosAuthPassword = "DUBBOGO_LB_NACOS_AUTH_PASSWORD"
)

// setupAuth is setup for the Nacos with authentication on: the test gets a
// group and a namespace of its own (created through the Nacos API, as an
// operator would), providers that log in by flags and consumers that log
// in by the YAML keys of conf/consumer.yaml.
func setupAuth(t *testing.T) *env {
	t.Helper()
	e := &env{
		nacos: needEnv(t, envNacosAuth), group: groupOf(t),
		namespace: fmt.Sprintf("it-%d", time.Now().UnixNano()),
		username:  os.Getenv(envNacosAuthUsername), password: os.Getenv(envNacosAuthPassword),
		token: new(accessToken),
	}
	if e.username == "" {
		e.username = "nacos"
	}
	if e.password == "" {
		t.Fatalf("%s is set but %s is not", envNacosAuth, envNacosAuthPassword)
	}
	e.prepare(t, envNacosAuth)
	e.createNamespace(t)
	e.consumerConf = e.authConsumerYAML(t, e.username, e.password)
	return e
}

// accessToken is the harness's own login to a Nacos.
type accessToken struct {
	mu    sync.Mutex
	token string
}

// scope adds to the query of an Open API call e's namespace and, with a
// username, an access token.
func (e *env) scope(ctx context.Context, q url.Values) error {
	if e.namespace != "" {
		q.Set("namespaceId", e.namespace)
	}
	if e.username == "" {
		return nil
	}
	token, err := e.login(ctx)
	if err != nil {
		return err
	}
	q.Set("accessToken", token)
	return nil
}

// login returns the harness's access token, logging in on first use.
func (e *env) login(ctx context.Context) (string, error) {
	e.token.mu.Lock()
	defer e.token.mu.Unlock()
	if e.token.token != "" {
		return e.token.token, nil
	}
	var out struct {
		AccessToken string `json:"accessToken"`
	}
	form := url.Values{"username": {e.username}, "password": {e.password}}
	if err := e.post(ctx, "/nacos/v3/auth/user/login", form, &out); err != nil {
		return "", fmt.Errorf("login as %q: %w", e.username, err)
	}
	if out.AccessToken == "" {
		return "", fmt.Errorf("login as %q: no access token", e.username)
	}
	e.token.token = out.AccessToken
	return out.AccessToken, nil
}

// post posts form to path of e's Nacos and decodes the JSON answer.
func (e *env) post(ctx context.Context, path string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.nacos+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

// createNamespace creates e's namespace through the Nacos 3 admin API.
func (e *env) createNamespace(t *testing.T) {
	t.Helper()
	token, err := e.login(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"namespaceId": {e.namespace}, "namespaceName": {e.namespace}, "namespaceDesc": {t.Name()}}
	var out struct {
		Data bool `json:"data"`
	}
	if err := e.post(context.Background(), "/nacos/v3/admin/core/namespace?accessToken="+url.QueryEscape(token), form, &out); err != nil || !out.Data {
		t.Fatalf("create namespace %s: %v (created: %v)", e.namespace, err, out.Data)
	}
}

// authConsumerYAML writes a copy of conf/consumer.yaml with its commented
// registry keys for a Nacos with authentication on
// filled in: e's namespace, and user and password (none when empty); it
// returns its path.
func (e *env) authConsumerYAML(t *testing.T, user, password string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rootDir, "conf", "consumer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(b)
	for _, kv := range [][3]string{{"namespace", "dev", e.namespace}, {"username", "nacos", user}, {"password", "change-me", password}} {
		line := "      # " + kv[0] + ": " + kv[1] + "\n"
		if strings.Count(yaml, line) != 1 {
			t.Fatalf("conf/consumer.yaml no longer has %q once: update the test", strings.TrimSpace(line))
		}
		yaml = strings.Replace(yaml, line, "      "+kv[0]+": "+strconv.Quote(kv[2])+"\n", 1)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("consumer-auth-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Providers and consumers log in to a Nacos with authentication on and
// work in a namespace of their own (the providers by flags, the consumers
// by the registry keys of conf/consumer.yaml): every provider gets
// traffic from every consumer, and no call fails.
func TestNacosAuthProvidersAndConsumersInANamespace(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setupAuth(t)
	names := []string{"a", "b", "c"}
	var ps []*provider
	for _, n := range names {
		ps = append(ps, e.startProvider(t, providerSpec{name: n}))
	}
	e.waitRegistered(t, ps...)
	public := *e
	public.namespace = ""
	if list, err := public.instances(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("the public namespace, same group: instances %v, error %v; want none (the providers belong to %s)", ports(list), err, e.namespace)
	}

	cs := e.startConsumers(t, len(ps), specsFor(balancers(t, "warmrandom", "swrr"))...)
	for _, c := range cs {
		r := c.collectCalls(t, 600)
		if !all(r, names...) {
			t.Errorf("%s: not every provider got calls: %v", c.name, r)
		}
		t.Logf("%s: %v", c.name, r)
	}
	for _, c := range cs {
		noErrors(t, c, c.finish(t))
	}
}

// A consumer whose Nacos refuses its login (a wrong password, an unknown
// user, no credentials at all) stops at start, within seconds, with a
// message that names the Nacos and says what failed, and no stack trace
// or password; dubbo-go alone would wait for providers it never gets.
func TestNacosAuthWrongCredentialsStopTheConsumerAtStart(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setupAuth(t)
	for name, tc := range map[string]struct{ user, password, want string }{
		"wrong_password": {e.username, e.password + "-wrong", `login as "` + e.username + `" failed`},
		"unknown_user":   {"no-such-user", e.password, `login as "no-such-user" failed`},
		"no_credentials": {"", "", "requires a login"},
	} {
		t.Run(name, func(t *testing.T) {
			conf := e.authConsumerYAML(t, tc.user, tc.password)
			start := time.Now()
			c := e.startConsumer(t, "", "-conf", conf)
			c.expectExit(2)
			err := c.wait(time.Minute)
			out := c.log.String()
			if !c.exited() {
				t.Fatalf("still running after a minute: %v; log:\n%s", err, tail(out, 20))
			}
			if code := c.cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("exit status %d, want 2 (configuration error)", code)
			}
			for _, want := range []string{e.nacos, tc.want} {
				if !strings.Contains(out, want) {
					t.Errorf("the output does not say %q:\n%s", want, tail(out, 20))
				}
			}
			for _, bad := range []string{"goroutine ", "panic", e.password} {
				if strings.Contains(out, bad) {
					t.Errorf("the output has %q:\n%s", bad, tail(out, 20))
				}
			}
			t.Logf("exited after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(tail(out, 3)))
		})
	}
}
