package app

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/global"

	"github.com/dubbogo-lb/lb/extension"
)

func TestReadConfigErrorsInsteadOfPanics(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("dubbo:\n  consumer: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"", filepath.Join(dir, "missing.yaml"), bad} {
		if k, err := ReadConfig(path); err == nil {
			t.Errorf("ReadConfig(%q) = %v, nil; want an error", path, k)
		}
	}
}

func TestShippedConfiguration(t *testing.T) {
	k, err := ReadConfig("../../../conf/consumer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const ref = "dubbo.consumer.references.GreeterClient."
	if got := k.String(ref + "loadbalance"); got != "warmrandom" {
		t.Errorf("consumer.yaml loadbalance = %q, want warmrandom", got)
	}
	if got := k.String("dubbo.consumer.filter"); got != "lbactive" {
		t.Errorf("consumer.yaml filter = %q, want lbactive", got)
	}

	k, err = ReadConfig("../../../conf/provider.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var seen *dubbo.InstanceOptions
	if _, err := NewInstance(k, func(o *dubbo.InstanceOptions) error { seen = o; return nil }); err != nil {
		t.Fatal(err)
	}
	nacos := seen.Registries["nacos"]
	if nacos == nil || nacos.RegistryType != "interface" || nacos.Address != "127.0.0.1:8848" {
		t.Fatalf("provider.yaml registry = %+v, want interface-level Nacos on 127.0.0.1:8848", nacos)
	}
	if tri := seen.Protocols["tri"]; tri == nil || tri.Ip != "127.0.0.1" {
		t.Fatalf("provider.yaml protocol = %+v, want tri on 127.0.0.1", tri)
	}

	boom := errors.New("boom")
	if _, err := NewInstance(k, func(*dubbo.InstanceOptions) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("NewInstance returned %v, want the edit's error", err)
	}
}

// Both YAML forms of a per-method balancer reach the reference: the params
// form as it is, the methods section through MethodBalancersToParams
// (dubbo-go v3.3.2 would drop the methods section when it dials).
func TestPerMethodBalancerForms(t *testing.T) {
	dir := t.TempDir()
	forms := map[string]string{
		"params":  "        params:\n          methods.Hello.loadbalance: lalb\n",
		"methods": "        methods:\n          - name: Hello\n            loadbalance: lalb\n",
	}
	for name, section := range forms {
		yaml := "dubbo:\n  consumer:\n    references:\n      GreeterClient:\n        loadbalance: random\n" + section
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		k, err := ReadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		var params map[string]string
		_, err = NewInstance(k, func(o *dubbo.InstanceOptions) error {
			if err := extension.CheckReferences(o.Consumer.References); err != nil {
				return err
			}
			extension.MethodBalancersToParams(o.Consumer.References)
			params = o.Consumer.References["GreeterClient"].Params
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := params["methods.Hello.loadbalance"]; got != "lalb" {
			t.Errorf("%s form: params %v, want methods.Hello.loadbalance=lalb", name, params)
		}
	}
}

// The registry keys for a Nacos with authentication on and a namespace,
// commented out in both shipped files, reach the registry once uncommented.
func TestShippedAuthKeys(t *testing.T) {
	keys := map[string]string{"namespace": "dev", "username": "nacos", "password": "change-me"}
	for _, file := range []string{"consumer.yaml", "provider.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../../conf", file))
		if err != nil {
			t.Fatal(err)
		}
		yaml := string(b)
		for key, value := range keys {
			line := "      # " + key + ": " + value + "\n"
			if strings.Count(yaml, line) != 1 {
				t.Fatalf("%s no longer has %q once: update the test", file, strings.TrimSpace(line))
			}
			yaml = strings.Replace(yaml, line, "      "+key+": "+value+"\n", 1)
		}
		path := filepath.Join(t.TempDir(), file)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		k, err := ReadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		var reg *global.RegistryConfig
		if _, err := NewInstance(k, func(o *dubbo.InstanceOptions) error { reg = o.Registries["nacos"]; return nil }); err != nil {
			t.Fatal(err)
		}
		if reg == nil || reg.Namespace != "dev" || reg.Username != "nacos" || reg.Password != "change-me" {
			t.Errorf("%s: registry %+v, want namespace dev, user nacos, password change-me", file, reg)
		}
	}
}

// The registry flags set what they are given on every registry, and leave
// the rest as the YAML has it.
func TestRegistryFlags(t *testing.T) {
	var r RegistryFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	r.Register(fs)
	if err := fs.Parse([]string{"-registry", "127.0.0.1:48848", "-namespace", "ns", "-username", "u", "-password", "p"}); err != nil {
		t.Fatal(err)
	}
	regs := map[string]*global.RegistryConfig{
		"a":   {Address: "127.0.0.1:8848", Group: "G", Namespace: "old", Username: "old", Password: "old"},
		"b":   {},
		"nil": nil,
	}
	r.Apply(regs)
	for name, group := range map[string]string{"a": "G", "b": ""} {
		want := global.RegistryConfig{Address: "127.0.0.1:48848", Group: group, Namespace: "ns", Username: "u", Password: "p"}
		if !reflect.DeepEqual(*regs[name], want) {
			t.Errorf("registry %s: %+v, want %+v", name, *regs[name], want)
		}
	}
}

// -registry-type sets the type of every registry, turns the metadata report
// on for application level, and takes nothing but the three types.
func TestRegistryTypeFlag(t *testing.T) {
	for typ, meta := range map[string]string{"service": "true", "all": "true", "interface": "false"} {
		var r RegistryFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		r.Register(fs)
		if err := fs.Parse([]string{"-registry-type", typ}); err != nil {
			t.Fatal(err)
		}
		regs := map[string]*global.RegistryConfig{"nacos": {RegistryType: "interface", UseAsMetaReport: "false"}}
		r.Apply(regs)
		if got := regs["nacos"]; got.RegistryType != typ || got.UseAsMetaReport != meta {
			t.Errorf("-registry-type %s: registry %+v, want type %s, use-as-meta-report %s", typ, got, typ, meta)
		}
	}
	var r RegistryFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	r.Register(fs)
	if err := fs.Parse([]string{"-registry-type", "app"}); err == nil {
		t.Error("-registry-type app accepted")
	}
}
