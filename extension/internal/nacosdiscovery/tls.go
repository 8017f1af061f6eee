package nacosdiscovery

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"dubbo.apache.org/dubbo-go/v3/common"
	dgnacos "dubbo.apache.org/dubbo-go/v3/remoting/nacos"
	nacosconst "github.com/nacos-group/nacos-sdk-go/v2/common/constant"

	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
)

// nacosConfig is dubbo-go's GetNacosConfig of the registry URL u plus the
// registry's TLS setting (nacosconf.TLS): with TLS on, every server is
// https, the SDK client's TLSCfg carries the same files (its gRPC
// connection and its HTTP login use them), and tc is the
// crypto/tls configuration of the Open API client, its files loaded; tc is
// nil with TLS off. A TLS setting that is wrong or whose files cannot be
// loaded is an error that names the key.
func nacosConfig(u *common.URL) (servers []nacosconst.ServerConfig, c nacosconst.ClientConfig, tc *tls.Config, err error) {
	servers, c, err = dgnacos.GetNacosConfig(u)
	if err != nil {
		return nil, c, nil, err
	}
	t, err := nacosconf.ReadTLS(u)
	if err != nil {
		return nil, c, nil, err
	}
	if !t.Enable {
		return servers, c, nil, nil
	}
	if tc, err = clientTLS(t); err != nil {
		return nil, c, nil, err
	}
	for i := range servers {
		servers[i].Scheme = "https"
	}
	// Appointed: the client takes this setting, not the process's
	// nacos_remote_client_rpc_tls_* environment variables.
	c.TLSCfg = nacosconst.TLSConfig{Appointed: true, Enable: true, CaFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerNameOverride: t.ServerName}
	return servers, c, tc, nil
}

// clientTLS loads the files of t into a client configuration that verifies
// the server against t's CA (the system's roots without one), TLS 1.2 at
// least.
func clientTLS(t nacosconf.TLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", nacosconf.TLSCAFileKey, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", nacosconf.TLSCAFileKey, t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", nacosconf.TLSCertFileKey, nacosconf.TLSKeyFileKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
