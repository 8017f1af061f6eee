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

// hashKey returns the ring point of a key: the first four bytes of md5(key)
// read as a little-endian uint32, as Dubbo's ConsistentHashSelector does with
// hash(md5(key), 0). It does not allocate.
func hashKey(key []byte) uint32 {
	d := md5.Sum(key)
	return binary.LittleEndian.Uint32(d[0:4])
}

// hashString is [hashKey] for a key held in a string. It does not allocate.
func hashString(key string) uint32 {
	// md5.Sum only reads its argument and keeps no reference to it, so the
	// string's bytes can be viewed in place instead of copied.
	d := md5.Sum(unsafe.Slice(unsafe.StringData(key), len(key)))
	return binary.LittleEndian.Uint32(d[0:4])
}

// keySpec turns invocation arguments into a key point. It lives as long as
// the hash.arguments value it was parsed from, across snapshots.
type keySpec struct {
	spec    string // hash.arguments, or defaultArguments when blank
	indexes []int
	// single is the only index when there is exactly one, else -1: the
	// common case hashes a string argument in place.
	single int
	// maxIndex is the largest non-negative index, -1 if none.
	maxIndex int
	where    string // "service S, method M", for logs
	// warned is set once a call was seen with fewer arguments than
	// maxIndex+1.
	warned atomic.Bool
}

// newKeySpec returns the key spec of c's hash.arguments, for the
// (service, method) where, as logged.
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

// keyStack is the size of the stack buffer keys are built in; longer keys
// use a pooled buffer.
const keyStack = 128

// maxPooledKey caps the buffers kept in keyPool.
const maxPooledKey = 64 << 10

// emptyKeyPoint is the point of the empty key.
var emptyKeyPoint = hashString("")

var keyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4*keyStack); return &b }}

// point returns the ring point of the key made of args: Dubbo's toKey,
// the concatenation of the Java string forms of the selected arguments
// that exist, hashed.
func (k *keySpec) point(args []any) uint32 {
	if len(args) <= k.maxIndex {
		k.warnMissing(len(args))
	}
	if k.single >= 0 {
		if k.single >= len(args) {
			return emptyKeyPoint
		}
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

// appendStack appends the key of args to dst if it is made of basic values
// (see appendBasic) that fit in dst's capacity; otherwise it returns false,
// never growing dst, so that a stack buffer stays on the stack.
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

// appendAny appends the key of args to dst, whatever their types.
func (k *keySpec) appendAny(dst []byte, args []any) []byte {
	for _, i := range k.indexes {
		if i >= 0 && i < len(args) {
			dst = AppendJava(dst, args[i])
		}
	}
	return dst
}

// warnMissing logs, once per key spec, a call with fewer arguments than
// hash.arguments selects.
func (k *keySpec) warnMissing(n int) {
	if k.warned.Load() || !k.warned.CompareAndSwap(false, true) {
		return
	}
	lblog.Warnf("%s, %s: a call has %d argument(s) but %s %q selects index %d; missing arguments contribute nothing to the key (logged once)",
		Name, k.where, n, argumentsKey, k.spec, k.maxIndex)
}

// callOf returns the method and arguments of inv as Dubbo's RpcUtils sees
// them: for a generic call ("$invoke" or "$invokeAsync" with arguments
// [method, types, args]) those of the real method, so that generic and
// ordinary calls of a method route alike, in Go and in Java.
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

// anySlice returns v as a []any if it is a slice of an empty interface type,
// such as []hessian.Object, which generic calls carry, without copying it.
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
