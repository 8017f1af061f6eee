package ringhash

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strconv"
)

// AppendJava appends what Java's String.valueOf gives for the Java value of
// v, the form a Java consumer hashes for the same argument: "null" for nil
// and nil pointers; strings as they are; booleans; integers in decimal (a
// rune is an int32: hash a char as a one-letter string); float64 and
// float32 as Double.toString and Float.toString of JDK 19 and later (JDK 17
// prints other digits for some values of 1e7 and above:
// docs/configuration.md); a
// pointer as its value; a fmt.Stringer by String; a named type of a kind
// above as that kind; anything else with %v (Java's Object.toString cannot
// be matched). Basic values are appended without allocation.
func AppendJava(dst []byte, v any) []byte {
	if out, ok := appendBasic(dst, v); ok {
		return out
	}
	if x, ok := v.(fmt.Stringer); ok {
		return appendStringer(dst, x)
	}
	return appendReflect(dst, v)
}

// appendBasic is AppendJava of nil, a string, a boolean, an integer or a
// float, else false. dst does not escape: keys can be built on the stack.
func appendBasic(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return append(dst, x...), true
	case int, int8, int16, int32, int64:
		return strconv.AppendInt(dst, reflect.ValueOf(x).Int(), 10), true
	case uint, uint8, uint16, uint32, uint64, uintptr:
		return strconv.AppendUint(dst, reflect.ValueOf(x).Uint(), 10), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case float64:
		return appendJavaFloat(dst, x, 64), true
	case float32:
		return appendJavaFloat(dst, float64(x), 32), true
	}
	return dst, false
}

// appendStringer appends s.String(), "null" for a nil pointer.
func appendStringer(dst []byte, s fmt.Stringer) []byte {
	if rv := reflect.ValueOf(s); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return append(dst, "null"...)
	}
	return append(dst, s.String()...)
}

// appendReflect handles named types over the basic kinds and pointers.
func appendReflect(dst []byte, v any) []byte {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return append(dst, "null"...)
		}
		return AppendJava(dst, rv.Elem().Interface())
	case reflect.String:
		return append(dst, rv.String()...)
	case reflect.Bool:
		return strconv.AppendBool(dst, rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(dst, rv.Uint(), 10)
	case reflect.Float32:
		return appendJavaFloat(dst, rv.Float(), 32)
	case reflect.Float64:
		return appendJavaFloat(dst, rv.Float(), 64)
	}
	return fmt.Append(dst, v)
}

// appendJavaFloat appends f as Java's Double.toString (bits 64) or
// Float.toString (bits 32): plain notation for 10⁻³ <= |f| < 10⁷, else
// "d.dddE±n", with a digit at least after the point and the exponent bare.
func appendJavaFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits, as Java's since JDK 19.
	var tmp [32]byte
	if f >= 1e-3 && f < 1e7 {
		s := strconv.AppendFloat(tmp[:0], f, 'f', -1, bits)
		if dst = append(dst, s...); bytes.IndexByte(s, '.') < 0 {
			dst = append(dst, ".0"...)
		}
		return dst
	}
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits) // d.ddde±xx
	if s[1] == 'e' {
		// One digit: Java prints the two closest to the value, which
		// differ from "d.0" only for subnormals (4.9E-324, Go's 5e-324).
		s = strconv.AppendFloat(tmp[:0], f, 'e', 1, bits)
	}
	mant, exp, _ := bytes.Cut(s, []byte{'e'})
	dst = append(append(dst, mant...), 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	return append(dst, bytes.TrimLeft(exp[1:], "0")...)
}
