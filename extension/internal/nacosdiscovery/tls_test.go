package nacosdiscovery

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/global"

	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
)

// writePEM writes one PEM block to a file of t's temporary directory and
// returns its path.
func writePEM(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientCert makes a self-signed client certificate and returns the paths
// of its certificate and key files, and the certificate.
func clientCert(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dubbogo-lb-test-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	return writePEM(t, "client.pem", "CERTIFICATE", der), writePEM(t, "client-key.pem", "PRIVATE KEY", keyDER), cert
}

// tlsRegistry is the registry of the Open API at srv with the nacos.tls.*
// parameters params.
func tlsRegistry(srv *httptest.Server, params map[string]string) *global.RegistryConfig {
	return &global.RegistryConfig{Protocol: Protocol, Address: strings.TrimPrefix(srv.URL, "https://"),
		Username: "u", Password: "p", Params: params}
}

// readerOf is the Reader of reg, as the keeper makes it.
func readerOf(t *testing.T, reg *global.RegistryConfig) (*Reader, error) {
	t.Helper()
	u, err := nacosURL(reg)
	if err != nil {
		t.Fatal(err)
	}
	return NewReader(u)
}

// With nacos.tls.enable and the server's CA, the Open API reads (and logs
// in) over https, presenting the client certificate when one is
// configured; without the CA, the server is refused, and plain http does
// not reach it.
func TestOpenAPIOverTLS(t *testing.T) {
	f := &fakeNacos{v3Login: http.StatusOK, list: http.StatusOK}
	var peer []*x509.Certificate // the client's certificates, as the server saw them
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer = r.TLS.PeerCertificates
		f.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := writePEM(t, "ca.pem", "CERTIFICATE", srv.Certificate().Raw)
	certFile, keyFile, cert := clientCert(t)

	reg := tlsRegistry(srv, map[string]string{nacosconf.TLSEnableKey: "true", nacosconf.TLSCAFileKey: ca,
		nacosconf.TLSCertFileKey: certFile, nacosconf.TLSKeyFileKey: keyFile})
	r, err := readerOf(t, reg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.api.bases[0], "https://") {
		t.Fatalf("Open API base %s, want https", r.api.bases[0])
	}
	if _, err := r.Instances(service, "G"); err != nil {
		t.Fatalf("a read over TLS with the server's CA: %v", err)
	}
	if len(peer) != 1 || !peer[0].Equal(cert) {
		t.Errorf("the server saw client certificates %v, want the configured one", peer)
	}
	if len(f.logins) != 1 || len(f.tokens) != 1 || f.tokens[0] == "" {
		t.Errorf("logins %v, tokens %v: want one login and a read with its token", f.logins, f.tokens)
	}
	if err := CheckLogin(reg); err != nil {
		t.Errorf("CheckLogin over TLS: %v", err)
	}

	// No CA: the system's roots do not know the test server.
	r, err = readerOf(t, tlsRegistry(srv, map[string]string{nacosconf.TLSEnableKey: "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Instances(service, "G"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a read over TLS without the server's CA: %v, want a certificate error", err)
	}
	// TLS off: plain http to a TLS server.
	r, err = readerOf(t, tlsRegistry(srv, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Instances(service, "G"); err == nil {
		t.Error("a plain http read of a TLS server succeeded")
	}
}

// The same setting reaches the Nacos client (nacos-sdk-go's TLSCfg, https
// servers).
func TestNacosConfigGivesTheClientTLS(t *testing.T) {
	u, err := common.NewURL("registry://127.0.0.1:8848,127.0.0.1:8858?" + nacosconf.TLSEnableKey + "=true&" +
		nacosconf.TLSServerNameKey + "=nacos.internal")
	if err != nil {
		t.Fatal(err)
	}
	servers, c, tc, err := nacosConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.Scheme != "https" {
			t.Errorf("server %s:%d has scheme %q, want https", s.IpAddr, s.Port, s.Scheme)
		}
	}
	if !c.TLSCfg.Enable || !c.TLSCfg.Appointed || c.TLSCfg.ServerNameOverride != "nacos.internal" || tc == nil || tc.ServerName != "nacos.internal" || tc.InsecureSkipVerify {
		t.Errorf("client TLS %+v, Open API TLS %v: want both on (the client's appointed), server name nacos.internal, verified", c.TLSCfg, tc)
	}
	u, _ = common.NewURL("registry://127.0.0.1:8848")
	if servers, c, tc, err := nacosConfig(u); err != nil || servers[0].Scheme == "https" || c.TLSCfg.Enable || tc != nil {
		t.Errorf("without nacos.tls.*: %v, %+v, %v, %v; want plain", servers, c.TLSCfg, tc, err)
	}
}

// A TLS setting that cannot work is an error at start that names the key,
// from CheckLogin, NewReader and the consumer's client alike, never a
// panic.
func TestBadTLSSettingIsAnErrorAtStart(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{nacosconf.TLSEnableKey: "true", nacosconf.TLSCAFileKey: missing}, "nacos.tls.ca-file: open " + missing},
		{map[string]string{nacosconf.TLSEnableKey: "true", nacosconf.TLSCAFileKey: notPEM}, "nacos.tls.ca-file: no PEM certificate"},
		{map[string]string{nacosconf.TLSEnableKey: "true", nacosconf.TLSCertFileKey: missing, nacosconf.TLSKeyFileKey: missing}, "nacos.tls.cert-file, nacos.tls.key-file: open " + missing},
		{map[string]string{nacosconf.TLSEnableKey: "on"}, `nacos.tls.enable="on"`},
		{map[string]string{nacosconf.TLSCAFileKey: notPEM}, "nacos.tls.enable is not true"},
	} {
		reg := &global.RegistryConfig{Protocol: Protocol, Address: "127.0.0.1:8848", Params: tc.params}
		if err := CheckLogin(reg); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "127.0.0.1:8848") {
			t.Errorf("CheckLogin with %v: %v, want an error naming the server and saying %q", tc.params, err, tc.want)
		}
		if _, err := readerOf(t, reg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewReader with %v: %v, want %q", tc.params, err, tc.want)
		}
		u, err := nacosURL(reg)
		if err != nil {
			t.Fatal(err)
		}
		if src, err := acquire(u); err == nil || !strings.Contains(err.Error(), tc.want) {
			if src != nil {
				src.release()
			}
			t.Errorf("the consumer's client with %v: %v, want %q", tc.params, err, tc.want)
		}
	}
}
