package app

import (
	"flag"
	"fmt"

	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/global"
)

// RegistryFlags are the command-line overrides of every registry of the
// YAML that the provider and the consumer share: an empty one keeps the
// YAML's value.
type RegistryFlags struct {
	Address   string
	Group     string
	Namespace string
	Username  string
	Password  string
	// Type is the registry type: interface, service (application level)
	// or all (both). Application level needs Nacos as the metadata report
	// too (the interface-to-application mapping, and the providers'
	// metadata with metadata-type remote), so service and all turn
	// use-as-meta-report on.
	Type string
}

// Register defines the flags on fs.
func (r *RegistryFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&r.Address, "registry", "", "address of every registry of the YAML, e.g. 127.0.0.1:8848 (empty: the YAML's)")
	fs.StringVar(&r.Group, "group", "", "Nacos group of every registry of the YAML, to run apart from others (empty: the YAML's)")
	fs.StringVar(&r.Namespace, "namespace", "", "Nacos namespace ID of every registry of the YAML (empty: the YAML's; none: public)")
	fs.StringVar(&r.Username, "username", "", "user name for a Nacos with authentication on (empty: the YAML's)")
	fs.StringVar(&r.Password, "password", "", "password of -username (empty: the YAML's)")
	fs.Func("registry-type", "registry type of every registry of the YAML: interface, service (application level) or all (default: the YAML's)", func(v string) error {
		switch v {
		case constant.RegistryTypeInterface, constant.RegistryTypeService, constant.RegistryTypeAll:
			r.Type = v
			return nil
		}
		return fmt.Errorf("%q is not interface, service or all", v)
	})
}

// Apply sets the flags that were given on every registry of regs.
func (r *RegistryFlags) Apply(regs map[string]*global.RegistryConfig) {
	for _, reg := range regs {
		if reg == nil {
			continue
		}
		set(&reg.Address, r.Address)
		set(&reg.Group, r.Group)
		set(&reg.Namespace, r.Namespace)
		set(&reg.Username, r.Username)
		set(&reg.Password, r.Password)
		set(&reg.RegistryType, r.Type)
		if r.Type == constant.RegistryTypeService || r.Type == constant.RegistryTypeAll {
			reg.UseAsMetaReport = "true"
		}
	}
}

func set(field *string, value string) {
	if value != "" {
		*field = value
	}
}
