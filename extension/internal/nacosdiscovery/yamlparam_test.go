package nacosdiscovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/common"
	"github.com/knadh/koanf"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
)

// nacos.updateCacheWhenEmpty, read from a consumer's YAML by dubbo-go's own
// loader (its dotted key under registries.<id>.params survives the
// loader's dotted paths), reaches the resync: with "false" (the value
// conf/consumer.yaml sets) the feed keeps its providers when the server
// answers twice with no instance; with "true", or without the key
// (dubbo-go's default), it takes the empty answer.
func TestUpdateCacheWhenEmptyInTheYAMLReachesTheResync(t *testing.T) {
	needNacos(t, envNacos)
	conf, err := os.ReadFile(filepath.Join("..", "..", "..", "conf", "consumer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const line = `        nacos.updateCacheWhenEmpty: "false"`
	if !strings.Contains(string(conf), line+"\n") {
		t.Fatalf("conf/consumer.yaml no longer sets %s: update the test", strings.TrimSpace(line))
	}
	for _, tc := range []struct {
		name, line string
		keep       bool
	}{
		{"false_as_conf", line, true},
		{"true", strings.Replace(line, `"false"`, `"true"`, 1), false},
		{"absent", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "consumer.yaml")
			if err := os.WriteFile(path, []byte(strings.Replace(string(conf), line+"\n", tc.line+"\n", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			// As the sample consumer reads it (samples/internal/app), and
			// as dubbo-go makes the registry's URL: its params verbatim.
			k := dubbo.GetConfigResolver(dubbo.NewLoaderConf(dubbo.WithPath(path)))
			var opts dubbo.InstanceOptions
			if err := k.UnmarshalWithConf(opts.Prefix(), &opts, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
				t.Fatal(err)
			}
			reg := opts.Registries["nacos"]
			if reg == nil {
				t.Fatalf("%s: no registries.nacos", path)
			}
			var params []common.Option
			for key, v := range reg.Params {
				params = append(params, common.WithParamsValue(key, v))
			}
			dir := t.TempDir()
			u, err := common.NewURL("registry://"+plainNacos(t).addr(), append(params,
				common.WithParamsValue("nacos.cacheDir", dir), common.WithParamsValue("nacos.logDir", dir))...)
			if err != nil {
				t.Fatal(err)
			}
			src, err := acquire(u)
			if err != nil {
				t.Fatal(err)
			}
			defer src.release()
			sub := &subscription{}
			f := src.watch(service, groupOf(t), sub, Options{})
			defer func() { _ = f.unwatch(sub) }()
			if f.keepOnEmpty != tc.keep {
				t.Fatalf("params %v: the feed keeps its list on an empty answer: %v, want %v", reg.Params, f.keepOnEmpty, tc.keep)
			}
			// The resync's two reads of an empty list, as TestReconcile.
			a := instance(1, true, true)
			f.onPush([]model.Instance{a}, nil)
			for range 2 {
				f.mu.Lock()
				pushes := f.pushes
				f.mu.Unlock()
				f.reconcile(nil, pushes)
			}
			f.mu.Lock()
			kept := len(f.pushed) == 1
			f.mu.Unlock()
			if kept != tc.keep {
				t.Errorf("params %v: after two empty answers the feed kept its provider: %v, want %v", reg.Params, kept, tc.keep)
			}
		})
	}
}
