package edf

import (
	"reflect"
	"time"

	"ergo.services/ergo/gen"
)

// Type descriptor codes. A descriptor precedes every value in an `any`
// position; composite descriptors nest (tSlice is followed by the element
// descriptor, and so on).
const (
	tNil byte = iota
	tBool
	tInt
	tInt8
	tInt16
	tInt32
	tInt64
	tUint
	tUint8
	tUint16
	tUint32
	tUint64
	tFloat32
	tFloat64
	tString
	tBytes // unnamed []byte
	tAtom
	tPID
	tProcessID
	tRef
	tAlias
	tEvent
	tTime
	tDuration
	tError      // the value is an error (only in `any` positions)
	tSlice      // + element descriptor
	tArray      // + uvarint length + element descriptor
	tMap        // + key descriptor + element descriptor
	tAny        // interface{} element/field type
	tErrorIface // error element/field type
	tNamed      // + canonical name of a registered type
	tLast
)

// Limits that keep a hostile frame from exhausting the stack or memory.
const (
	maxDepth         = 64      // nesting of descriptors and values
	maxZeroSizeElems = 1 << 16 // elements of a zero-byte type in one slice
	maxArrayLen      = 1 << 20 // length of an array type built from the wire
	maxArrayBytes    = 1 << 24 // memory size of such an array type
)

var (
	anyType   = reflect.TypeOf((*any)(nil)).Elem()
	errorType = reflect.TypeOf((*error)(nil)).Elem()
	bytesType = reflect.TypeOf([]byte(nil))
	timeType  = reflect.TypeOf(time.Time{})
)

// special are the types with a built-in wire form.
var special = map[reflect.Type]byte{
	reflect.TypeOf(gen.Atom("")):     tAtom,
	reflect.TypeOf(gen.PID{}):        tPID,
	reflect.TypeOf(gen.ProcessID{}):  tProcessID,
	reflect.TypeOf(gen.Ref{}):        tRef,
	reflect.TypeOf(gen.Alias{}):      tAlias,
	reflect.TypeOf(gen.Event{}):      tEvent,
	timeType:                         tTime,
	reflect.TypeOf(time.Duration(0)): tDuration,
}

// kindCodes maps the unnamed basic kinds to their descriptor codes.
var kindCodes = map[reflect.Kind]byte{
	reflect.Bool: tBool, reflect.Int: tInt, reflect.Int8: tInt8, reflect.Int16: tInt16,
	reflect.Int32: tInt32, reflect.Int64: tInt64, reflect.Uint: tUint, reflect.Uint8: tUint8,
	reflect.Uint16: tUint16, reflect.Uint32: tUint32, reflect.Uint64: tUint64,
	reflect.Float32: tFloat32, reflect.Float64: tFloat64, reflect.String: tString,
}

// codeTypes is the reverse of special and kindCodes: descriptor code to type.
var codeTypes = func() map[byte]reflect.Type {
	m := map[byte]reflect.Type{
		tBool: reflect.TypeOf(false), tInt: reflect.TypeOf(int(0)), tInt8: reflect.TypeOf(int8(0)),
		tInt16: reflect.TypeOf(int16(0)), tInt32: reflect.TypeOf(int32(0)), tInt64: reflect.TypeOf(int64(0)),
		tUint: reflect.TypeOf(uint(0)), tUint8: reflect.TypeOf(uint8(0)), tUint16: reflect.TypeOf(uint16(0)),
		tUint32: reflect.TypeOf(uint32(0)), tUint64: reflect.TypeOf(uint64(0)),
		tFloat32: reflect.TypeOf(float32(0)), tFloat64: reflect.TypeOf(float64(0)),
		tString: reflect.TypeOf(""), tBytes: bytesType, tAny: anyType, tErrorIface: errorType,
	}
	for t, c := range special {
		m[c] = t
	}
	return m
}()

// TypeName returns the canonical wire name of a named type:
// "#" + PkgPath + "/" + Name.
func TypeName(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.String()
	}
	return "#" + t.PkgPath() + "/" + t.Name()
}

// minWire reports whether a value of t always takes at least one byte on
// the wire; only (nested) zero-length arrays take none.
func minWire(t reflect.Type) int {
	if _, ok := special[t]; ok {
		return 1
	}
	if t.Kind() == reflect.Array && (t.Len() == 0 || minWire(t.Elem()) == 0) {
		return 0
	}
	return 1
}
