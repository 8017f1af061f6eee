package urlparam

import (
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common"
)

func TestReadNacosTLS(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  NacosTLS
		err   string // in the error; "" for none
	}{
		{"", NacosTLS{}, ""},
		{"nacos.tls.enable=false", NacosTLS{}, ""},
		{"nacos.tls.enable=true", NacosTLS{Enable: true}, ""},
		{"nacos.tls.enable=true&nacos.tls.ca-file=/ca.pem&nacos.tls.server-name=nacos.example",
			NacosTLS{Enable: true, CAFile: "/ca.pem", ServerName: "nacos.example"}, ""},
		{"nacos.tls.enable=true&nacos.tls.cert-file=/c.pem&nacos.tls.key-file=/k.pem",
			NacosTLS{Enable: true, CertFile: "/c.pem", KeyFile: "/k.pem"}, ""},
		{"nacos.tls.enable=yes", NacosTLS{}, `nacos.tls.enable="yes" is not true or false`},
		{"nacos.tls.ca-file=/ca.pem", NacosTLS{}, "nacos.tls.ca-file is set but nacos.tls.enable is not true"},
		{"nacos.tls.enable=false&nacos.tls.key-file=/k.pem", NacosTLS{}, "nacos.tls.key-file is set"},
		{"nacos.tls.enable=true&nacos.tls.cert-file=/c.pem", NacosTLS{}, "give both or neither"},
		{"nacos.tls.enable=true&nacos.tls.key-file=/k.pem", NacosTLS{}, "give both or neither"},
	} {
		u, err := common.NewURL("registry://127.0.0.1:8848?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadNacosTLS(u)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.query, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.query, err, tc.err)
		case got != tc.want:
			t.Errorf("%q = %+v, want %+v", tc.query, got, tc.want)
		}
	}
	if got, err := ReadNacosTLS(nil); err != nil || got != (NacosTLS{}) {
		t.Errorf("ReadNacosTLS(nil) = %+v, %v; want TLS off", got, err)
	}
}

// FuzzParseNacosTLS checks the nacos.tls.* parameters: whatever the values,
// an accepted setting is TLS off with no file named, or TLS on with the
// files as given and a certificate only with its key; nothing panics.
func FuzzParseNacosTLS(f *testing.F) {
	for _, s := range [][5]string{
		{"", "", "", "", ""}, {"true", "/ca.pem", "", "", ""}, {"true", "", "/c.pem", "/k.pem", "n"},
		{"1", "", "/c.pem", "", ""}, {"false", "/ca.pem", "", "", ""}, {"TRUE ", "", "", "", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4])
	}
	f.Fuzz(func(t *testing.T, enable, ca, cert, key, name string) {
		values := map[string]string{NacosTLSEnableKey: enable, NacosTLSCAFileKey: ca,
			NacosTLSCertFileKey: cert, NacosTLSKeyFileKey: key, NacosTLSServerNameKey: name}
		got, err := ParseNacosTLS(func(k string) string { return values[k] })
		if err != nil {
			if got != (NacosTLS{}) {
				t.Fatalf("an error (%v) with a setting %+v", err, got)
			}
			return
		}
		if !got.Enable {
			if got != (NacosTLS{}) || ca+cert+key+name != "" {
				t.Fatalf("TLS off as %+v from %q", got, values)
			}
			return
		}
		if got.CAFile != ca || got.CertFile != cert || got.KeyFile != key || got.ServerName != name || (cert == "") != (key == "") {
			t.Fatalf("TLS on as %+v from %q", got, values)
		}
	})
}
