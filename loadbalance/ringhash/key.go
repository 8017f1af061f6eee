package ringhash

import (
	"crypto/md5"
	"encoding/binary"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

// hashKey returns the ring point of a key, Dubbo's hash(md5(key), 0): the
// first four bytes of md5(key), little-endian.
func hashKey(key []byte) uint32 {
	d := md5.Sum(key)
	return binary.LittleEndian.Uint32(d[0:4])
}

// hashString is hashKey of a string, read in place (md5.Sum keeps no
// reference).
func hashString(key string) uint32 {
	d := md5.Sum(unsafe.Slice(unsafe.StringData(key), len(key)))
	return binary.LittleEndian.Uint32(d[0:4])
}

// keySpec turns the arguments of a call into a key point. It lives as long
// as its hash.arguments value, across snapshots.
type keySpec struct {
	spec     string // hash.arguments, or defaultArguments when blank
	indexes  []int
	single   int    // the only index, if there is one and it is not negative, else -1
	maxIndex int    // the largest index, -1 if none is non-negative
	where    string // "service S, method M", for logs
	warned   atomic.Bool
}

// newKeySpec returns the key spec of c, for the (service, method) where.
func newKeySpec(c *config, where string) *keySpec {
	k := &keySpec{spec: c.spec, indexes: c.indexes, single: -1, maxIndex: -1, where: where}
	for _, i := range k.indexes {
		k.maxIndex = max(k.maxIndex, i)
	}
	if len(k.indexes) == 1 && k.indexes[0] >= 0 {
		k.single = k.indexes[0]
	}
	return k
}

// Keys are built in a stack buffer of keyStack bytes, longer ones in a
// pooled buffer (of at most maxPooledKey bytes when returned to the pool).
const (
	keyStack     = 128
	maxPooledKey = 64 << 10
)

var keyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4*keyStack); return &b }}

// point returns the ring point of args' key, Dubbo's toKey: the Java
// string forms (AppendJava) of the selected arguments that exist,
// concatenated. It does not allocate.
func (k *keySpec) point(args []any) uint32 {
	if len(args) <= k.maxIndex {
		k.warnMissing(len(args))
	}
	if k.single >= 0 && k.single < len(args) {
		if s, ok := args[k.single].(string); ok {
			return hashString(s) // the common case: no copy at all
		}
	}
	var stack [keyStack]byte
	if key, ok := k.appendStack(stack[:0], args); ok {
		return hashKey(key)
	}
	pb := keyPool.Get().(*[]byte)
	long := k.appendAny((*pb)[:0], args)
	p := hashKey(long)
	if cap(long) <= maxPooledKey {
		*pb = long[:0]
		keyPool.Put(pb)
	}
	return p
}

// appendStack appends args' key to dst if it is made of basic values
// (appendBasic) that fit in dst's capacity, else reports false; it never
// grows dst, so that a stack buffer stays on the stack.
func (k *keySpec) appendStack(dst []byte, args []any) ([]byte, bool) {
	for _, i := range k.indexes {
		if i < 0 || i >= len(args) {
			continue
		}
		need := 32 // enough for any null, bool, integer or float
		if s, ok := args[i].(string); ok {
			need = len(s)
		}
		if cap(dst)-len(dst) < need {
			return dst, false
		}
		var ok bool
		if dst, ok = appendBasic(dst, args[i]); !ok {
			return dst, false
		}
	}
	return dst, true
}

// appendAny appends args' key to dst, whatever their types.
func (k *keySpec) appendAny(dst []byte, args []any) []byte {
	for _, i := range k.indexes {
		if i >= 0 && i < len(args) {
			dst = AppendJava(dst, args[i])
		}
	}
	return dst
}

// warnMissing logs, once, a call with fewer arguments than the spec selects.
func (k *keySpec) warnMissing(n int) {
	if k.warned.Load() || !k.warned.CompareAndSwap(false, true) {
		return
	}
	lblog.Warnf("%s, %s: a call has %d argument(s) but %s %q selects index %d; missing arguments contribute nothing to the key (logged once)",
		Name, k.where, n, argumentsKey, k.spec, k.maxIndex)
}

// callOf returns the method and arguments of inv as Dubbo's RpcUtils sees
// them: those of the real method for a generic call ($invoke or
// $invokeAsync of [method, types, args]), so that it routes as the method.
func callOf(inv base.Invocation) (string, []any) {
	method, args := inv.MethodName(), inv.Arguments()
	if (method == genericInvoke || method == genericInvokeAsync) && len(args) >= 3 {
		if m, ok := args[0].(string); ok {
			if real, ok := anySlice(args[2]); ok {
				return m, real
			}
		}
	}
	return method, args
}

// Method names of dubbo-go's and Dubbo's generic calls.
const (
	genericInvoke      = "$invoke"
	genericInvokeAsync = "$invokeAsync"
)

// anySlice returns v as a []any, without a copy, if it is a slice of an
// empty interface type such as generic calls' []hessian.Object.
func anySlice(v any) ([]any, bool) {
	if s, ok := v.([]any); ok {
		return s, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return nil, false
	}
	if e := rv.Type().Elem(); e.Kind() != reflect.Interface || e.NumMethod() != 0 {
		return nil, false
	}
	// A slice of any empty interface type has the layout of []any.
	return unsafe.Slice((*any)(rv.UnsafePointer()), rv.Len()), true
}
