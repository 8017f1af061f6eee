package extension

import (
	"testing"

	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistersFilterAndBalancers(t *testing.T) {
	f, ok := dgext.GetFilter(FilterName)
	require.True(t, ok)
	assert.NotNil(t, f)
	builtins := []string{"random", "roundrobin", "leastactive", "consistenthashing", "p2c", "aliasmethod", "interleavedweightedroundrobin"}
	require.NotEmpty(t, Balancers())
	for _, name := range Balancers() {
		assert.NotContains(t, builtins, name, "collides with a dubbo-go built-in")
		lb := dgext.GetLoadbalance(name)
		require.NotNil(t, lb, name)
		assert.Same(t, lb, dgext.GetLoadbalance(name), "%s: one singleton", name)
		assert.NoError(t, CheckBalancer(name))
	}
}

func TestCheckBalancerNamesTheChoices(t *testing.T) {
	assert.NoError(t, CheckBalancer(""))
	err := CheckBalancer("fastest-please")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"fastest-please"`)
	for _, name := range Balancers() {
		assert.Contains(t, err.Error(), name)
	}
}
