package warmup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"dubbo.apache.org/dubbo-go/v3/common"
)

func TestMethodTimeout(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		want   time.Duration
		ok     bool
	}{
		{nil, DefaultTimeout, false},
		{map[string]string{"timeout": "5s"}, 5 * time.Second, true},
		{map[string]string{"timeout": "1500"}, 1500 * time.Millisecond, true}, // Dubbo Java: ms
		{map[string]string{"timeout": "5s", "methods.Say.timeout": "200ms"}, 200 * time.Millisecond, true},
		{map[string]string{"timeout": "5s", "methods.Other.timeout": "200ms"}, 5 * time.Second, true},
		{map[string]string{"timeout": "abc"}, DefaultTimeout, false},
		{map[string]string{"timeout": "-3s"}, DefaultTimeout, false},
		{map[string]string{"timeout": "0"}, DefaultTimeout, false},
		{map[string]string{"timeout": "99999999999999"}, DefaultTimeout, false},
		{map[string]string{"methods.Say.timeout": "bad", "timeout": "2s"}, 2 * time.Second, true},
	} {
		opts := []common.Option{}
		for k, v := range c.params {
			opts = append(opts, common.WithParamsValue(k, v))
		}
		u := common.NewURLWithOptions(opts...)
		d, ok := MethodTimeout(u, "Say")
		assert.Equal(t, c.ok, ok, "%v", c.params)
		assert.Equal(t, c.want, d, "%v", c.params)
	}
}

func TestMethodParam(t *testing.T) {
	u := common.NewURLWithOptions(common.WithParamsValue("k", "service"), common.WithParamsValue("methods.Say.k", "method"))
	assert.Equal(t, "method", MethodParam(u, "Say", "k"))
	assert.Equal(t, "service", MethodParam(u, "Other", "k"))
	assert.Equal(t, "service", MethodParam(u, "", "k"))
	assert.Equal(t, "", MethodParam(u, "Say", "missing"))
}
