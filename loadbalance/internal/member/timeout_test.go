package member

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

func TestMethodTimeout(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{map[string]string{"timeout": "5s"}, 5 * time.Second, true},
		{map[string]string{"timeout": "1500"}, 1500 * time.Millisecond, true}, // Dubbo Java: ms
		{map[string]string{"timeout": "5s", "methods.Say.timeout": "200ms"}, 200 * time.Millisecond, true},
		{map[string]string{"timeout": "5s", "methods.Other.timeout": "200ms"}, 5 * time.Second, true},
		{map[string]string{"timeout": "abc"}, 0, false},
		{map[string]string{"timeout": "-3s"}, 0, false},
		{map[string]string{"timeout": "0"}, 0, false},
		{map[string]string{"timeout": "99999999999999"}, 0, false},
		{map[string]string{"methods.Say.timeout": "bad", "timeout": "2s"}, 2 * time.Second, true},
	} {
		u := lbtest.Provider(20000, c.params).GetURL()
		d, ok := MethodTimeout(u, "Say")
		assert.Equal(t, c.ok, ok, "%v", c.params)
		assert.Equal(t, c.want, d, "%v", c.params)
	}
}
