package edf

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"ergo.services/ergo/gen"
)

// ErrUnknownType is wrapped by decode errors for a type name that is not
// registered on the receiving side.
var ErrUnknownType = errors.New("edf: unknown type")

func malformed(format string, args ...any) error {
	return fmt.Errorf("edf: "+format+": %w", append(args, gen.ErrMalformed)...)
}

// Decoder reads values with the registrations of one registry snapshot.
// Malformed input yields an error, never a panic.
type Decoder struct {
	Reader
	s     *snapshot
	es    *snapshot // the errors that decode to their registered variable
	depth int
}

// NewDecoder returns a decoder reading b.
func (r *Registry) NewDecoder(b []byte) *Decoder {
	s := r.snap.Load()
	return &Decoder{Reader: Reader{buf: b}, s: s, es: s}
}

// NewDecoderFor returns a decoder that maps registered error names to the
// variables in errs only; types are those registered now.
func (r *Registry) NewDecoderFor(b []byte, errs Errors) *Decoder {
	d := r.NewDecoder(b)
	if errs.s != nil {
		d.es = errs.s
	}
	return d
}

func (d *Decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return malformed("nesting deeper than %d", maxDepth)
	}
	return nil
}

// ReadAny reads what WriteAny wrote.
func (d *Decoder) ReadAny() (any, error) {
	c, err := d.Byte()
	if err != nil {
		return nil, err
	}
	switch c {
	case tNil:
		return nil, nil
	case tError:
		return d.ReadError()
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	t, err := d.descFrom(c, 0)
	if err != nil {
		return nil, err
	}
	v := reflect.New(t).Elem()
	if err := d.value(v); err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// ReadError reads what WriteError wrote.
func (d *Decoder) ReadError() (error, error) {
	c, err := d.Byte()
	if err != nil {
		return nil, err
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	switch c {
	case errNil:
		return nil, nil
	case errRegistered:
		name, err := d.String()
		if err != nil {
			return nil, err
		}
		if e, ok := d.es.errs[name]; ok {
			return e, nil
		}
		return errors.New(name), nil // not registered here when the connection formed
	case errString:
		msg, err := d.String()
		if err != nil {
			return nil, err
		}
		return errors.New(msg), nil
	case errTyped:
		x, err := d.ReadAny()
		if err != nil {
			return nil, err
		}
		e, ok := x.(error)
		if !ok {
			return nil, malformed("typed error of %T is not an error", x)
		}
		return e, nil
	case errWrapped:
		msg, err := d.String()
		if err != nil {
			return nil, err
		}
		n, err := d.length(1)
		if err != nil {
			return nil, err
		}
		wrapped := make([]error, 0, n)
		for i := 0; i < n; i++ {
			w, err := d.ReadError()
			if err != nil {
				return nil, err
			}
			if w != nil {
				wrapped = append(wrapped, w)
			}
		}
		return &gen.Error{Msg: msg, Wrapped: wrapped}, nil
	}
	return nil, malformed("unknown error code %d", c)
}

// desc reads a type descriptor.
func (d *Decoder) desc(depth int) (reflect.Type, error) {
	c, err := d.Byte()
	if err != nil {
		return nil, err
	}
	return d.descFrom(c, depth)
}

func (d *Decoder) descFrom(c byte, depth int) (reflect.Type, error) {
	if depth > maxDepth {
		return nil, malformed("type descriptor nests deeper than %d", maxDepth)
	}
	if t, ok := codeTypes[c]; ok {
		return t, nil
	}
	switch c {
	case tSlice:
		elem, err := d.desc(depth + 1)
		if err != nil {
			return nil, err
		}
		return reflect.SliceOf(elem), nil
	case tArray:
		n, err := d.Uvarint()
		if err != nil {
			return nil, err
		}
		elem, err := d.desc(depth + 1)
		if err != nil {
			return nil, err
		}
		// Bound the array before reflect builds it: the decoder allocates
		// one value of this type. Elements that take no bytes on the wire
		// (zero-length arrays) would let a tiny frame demand billions of
		// iterations, so such arrays are refused.
		if n > maxArrayLen || (elem.Size() > 0 && n > uint64(maxArrayBytes/elem.Size())) {
			return nil, malformed("array of %d %s is too large", n, elem)
		}
		if n > 0 && minWire(elem) == 0 {
			return nil, malformed("array of %d zero-size %s", n, elem)
		}
		return reflect.ArrayOf(int(n), elem), nil
	case tMap:
		key, err := d.desc(depth + 1)
		if err != nil {
			return nil, err
		}
		if !key.Comparable() {
			return nil, malformed("map key %s is not comparable", key)
		}
		elem, err := d.desc(depth + 1)
		if err != nil {
			return nil, err
		}
		return reflect.MapOf(key, elem), nil
	case tNamed:
		name, err := d.String()
		if err != nil {
			return nil, err
		}
		te := d.s.names[name]
		if te == nil {
			return nil, fmt.Errorf("%w %q", ErrUnknownType, name)
		}
		return te.typ, nil
	}
	return nil, malformed("unknown type code %d", c)
}

// value reads the body of a value of v's type into v (settable).
func (d *Decoder) value(v reflect.Value) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer func() { d.depth-- }()
	t := v.Type()
	if c, ok := special[t]; ok {
		return d.special(c, v)
	}
	switch t.Kind() {
	case reflect.Interface:
		if t == errorType {
			e, err := d.ReadError()
			if err != nil {
				return err
			}
			if e != nil {
				v.Set(reflect.ValueOf(e))
			}
			return nil
		}
		x, err := d.ReadAny()
		if err != nil {
			return err
		}
		if x != nil {
			xv := reflect.ValueOf(x)
			if !xv.Type().AssignableTo(t) {
				return malformed("%s does not fit %s", xv.Type(), t)
			}
			v.Set(xv)
		}
	case reflect.Bool:
		b, err := d.Byte()
		if err != nil {
			return err
		}
		if b > 1 {
			return malformed("bad bool %d", b)
		}
		v.SetBool(b == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := d.Varint()
		if err != nil {
			return err
		}
		if v.OverflowInt(n) {
			return malformed("%d overflows %s", n, t)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := d.Uvarint()
		if err != nil {
			return err
		}
		if v.OverflowUint(n) {
			return malformed("%d overflows %s", n, t)
		}
		v.SetUint(n)
	case reflect.Float32:
		f, err := d.Float32()
		if err != nil {
			return err
		}
		v.SetFloat(float64(f))
	case reflect.Float64:
		f, err := d.Float64()
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case reflect.String:
		s, err := d.String()
		if err != nil {
			return err
		}
		v.SetString(s)
	case reflect.Slice:
		return d.slice(v)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := d.value(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		return d.mapValue(v)
	case reflect.Struct:
		te := d.s.types[t]
		if te == nil || te.builtin {
			return fmt.Errorf("%w %s", ErrUnknownType, TypeName(t))
		}
		n, err := d.Uvarint()
		if err != nil {
			return err
		}
		if n != uint64(len(te.fields)) {
			return malformed("type %s has %d fields here, %d on the wire", te.name, len(te.fields), n)
		}
		for _, i := range te.fields {
			if err := d.value(v.Field(i)); err != nil {
				return err
			}
		}
	default:
		return malformed("cannot decode %s", t)
	}
	return nil
}

func (d *Decoder) slice(v reflect.Value) error {
	t := v.Type()
	n, err := d.Uvarint()
	if err != nil || n == 0 {
		return err // 0 = nil slice
	}
	n--
	limit := uint64(d.Len())
	if minWire(t.Elem()) == 0 {
		limit = maxZeroSizeElems
	}
	if n > limit {
		return malformed("slice length %d exceeds input", n)
	}
	if t.Elem().Kind() == reflect.Uint8 {
		raw, err := d.Raw(int(n))
		if err != nil {
			return err
		}
		if t.Elem() == codeTypes[tUint8] {
			v.SetBytes(append([]byte{}, raw...))
			return nil
		}
		s := reflect.MakeSlice(t, int(n), int(n))
		for i, b := range raw {
			s.Index(i).SetUint(uint64(b))
		}
		v.Set(s)
		return nil
	}
	s := reflect.MakeSlice(t, int(n), int(n))
	for i := 0; i < int(n); i++ {
		if err := d.value(s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func (d *Decoder) mapValue(v reflect.Value) error {
	t := v.Type()
	n, err := d.Uvarint()
	if err != nil || n == 0 {
		return err // 0 = nil map
	}
	n--
	limit := uint64(d.Len())
	if minWire(t.Key()) == 0 && minWire(t.Elem()) == 0 {
		limit = maxZeroSizeElems
	}
	if n > limit {
		return malformed("map length %d exceeds input", n)
	}
	m := reflect.MakeMapWithSize(t, int(min(n, 1024)))
	for i := uint64(0); i < n; i++ {
		k := reflect.New(t.Key()).Elem()
		if err := d.value(k); err != nil {
			return err
		}
		e := reflect.New(t.Elem()).Elem()
		if err := d.value(e); err != nil {
			return err
		}
		if !k.Comparable() {
			return malformed("map key of %s is not comparable", k.Type())
		}
		m.SetMapIndex(k, e)
	}
	v.Set(m)
	return nil
}

func (d *Decoder) special(c byte, v reflect.Value) error {
	switch c {
	case tAtom:
		s, err := d.String()
		if err != nil {
			return err
		}
		v.SetString(s)
	case tPID:
		p, err := d.PID()
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(p))
	case tProcessID, tEvent:
		name, err := d.String()
		if err != nil {
			return err
		}
		node, err := d.String()
		if err != nil {
			return err
		}
		if c == tEvent {
			v.Set(reflect.ValueOf(gen.Event{Name: gen.Atom(name), Node: gen.Atom(node)}))
		} else {
			v.Set(reflect.ValueOf(gen.ProcessID{Name: gen.Atom(name), Node: gen.Atom(node)}))
		}
	case tRef, tAlias:
		r, err := d.Ref()
		if err != nil {
			return err
		}
		if c == tAlias {
			v.Set(reflect.ValueOf(gen.Alias(r)))
		} else {
			v.Set(reflect.ValueOf(r))
		}
	case tTime:
		b, err := d.Blob()
		if err != nil {
			return err
		}
		var tm time.Time
		if err := tm.UnmarshalBinary(b); err != nil {
			return malformed("time: %v", err)
		}
		v.Set(reflect.ValueOf(tm))
	case tDuration:
		n, err := d.Varint()
		if err != nil {
			return err
		}
		v.SetInt(n)
	}
	return nil
}
