package nacosconf

import (
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common"
)

func TestReadTLS(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  TLS
		err   string // in the error; "" for none
	}{
		{"", TLS{}, ""},
		{"nacos.tls.enable=false", TLS{}, ""},
		{"nacos.tls.enable=true", TLS{Enable: true}, ""},
		{"nacos.tls.enable=true&nacos.tls.ca-file=/ca.pem&nacos.tls.server-name=nacos.example",
			TLS{Enable: true, CAFile: "/ca.pem", ServerName: "nacos.example"}, ""},
		{"nacos.tls.enable=true&nacos.tls.cert-file=/c.pem&nacos.tls.key-file=/k.pem",
			TLS{Enable: true, CertFile: "/c.pem", KeyFile: "/k.pem"}, ""},
		{"nacos.tls.enable=yes", TLS{}, `nacos.tls.enable="yes" is not true or false`},
		{"nacos.tls.ca-file=/ca.pem", TLS{}, "nacos.tls.ca-file is set but nacos.tls.enable is not true"},
		{"nacos.tls.enable=false&nacos.tls.key-file=/k.pem", TLS{}, "nacos.tls.key-file is set"},
		{"nacos.tls.enable=true&nacos.tls.cert-file=/c.pem", TLS{}, "give both or neither"},
		{"nacos.tls.enable=true&nacos.tls.key-file=/k.pem", TLS{}, "give both or neither"},
	} {
		u, err := common.NewURL("registry://127.0.0.1:8848?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadTLS(u)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.query, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.query, err, tc.err)
		case got != tc.want:
			t.Errorf("%q = %+v, want %+v", tc.query, got, tc.want)
		}
	}
	if got, err := ReadTLS(nil); err != nil || got != (TLS{}) {
		t.Errorf("ReadTLS(nil) = %+v, %v; want TLS off", got, err)
	}
}

// FuzzParseTLS checks the nacos.tls.* parameters: whatever the values,
// an accepted setting is TLS off with no file named, or TLS on with the
// files as given and a certificate only with its key; nothing panics.
func FuzzParseTLS(f *testing.F) {
	for _, s := range [][5]string{
		{"", "", "", "", ""}, {"true", "/ca.pem", "", "", ""}, {"true", "", "/c.pem", "/k.pem", "n"},
		{"1", "", "/c.pem", "", ""}, {"false", "/ca.pem", "", "", ""}, {"TRUE ", "", "", "", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4])
	}
	f.Fuzz(func(t *testing.T, enable, ca, cert, key, name string) {
		values := map[string]string{TLSEnableKey: enable, TLSCAFileKey: ca,
			TLSCertFileKey: cert, TLSKeyFileKey: key, TLSServerNameKey: name}
		got, err := ParseTLS(func(k string) string { return values[k] })
		if err != nil {
			if got != (TLS{}) {
				t.Fatalf("an error (%v) with a setting %+v", err, got)
			}
			return
		}
		if !got.Enable {
			if got != (TLS{}) || ca+cert+key+name != "" {
				t.Fatalf("TLS off as %+v from %q", got, values)
			}
			return
		}
		if got.CAFile != ca || got.CertFile != cert || got.KeyFile != key || got.ServerName != name || (cert == "") != (key == "") {
			t.Fatalf("TLS on as %+v from %q", got, values)
		}
	})
}
