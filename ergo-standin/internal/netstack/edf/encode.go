package edf

import (
	"fmt"
	"reflect"
	"time"

	"ergo.services/ergo/gen"
)

// Error body codes (the form an error value takes on the wire).
const (
	errNil        byte = iota
	errRegistered      // + wire name: the receiver returns its registered variable
	errString          // + message: decoded with errors.New
	errTyped           // + an `any` value of a registered type implementing error
	errWrapped         // + message + wrapped error bodies: decoded as *gen.Error
)

var errDeep = fmt.Errorf("edf: value nests deeper than %d levels: %w", maxDepth, gen.ErrUnsupported)

// Encoder writes values with the registrations of one registry snapshot.
type Encoder struct {
	Writer
	s     *snapshot
	es    *snapshot // the errors that travel by identity
	depth int
}

// NewEncoder returns an encoder appending to buf.
func (r *Registry) NewEncoder(buf []byte) *Encoder {
	s := r.snap.Load()
	return &Encoder{Writer: Writer{buf: buf}, s: s, es: s}
}

// NewEncoderFor returns an encoder whose registered errors travel by
// identity only if they are in errs; types are those registered now.
func (r *Registry) NewEncoderFor(buf []byte, errs Errors) *Encoder {
	e := r.NewEncoder(buf)
	if errs.s != nil {
		e.es = errs.s
	}
	return e
}

// WriteAny writes a type descriptor and the value. Unregistered named types
// and kinds the codec cannot carry (pointers, channels, functions, unnamed
// structs) give an error naming the type and wrapping gen.ErrUnregistered
// or gen.ErrUnsupported.
func (e *Encoder) WriteAny(v any) error {
	if v == nil {
		e.Byte(tNil)
		return nil
	}
	if e.depth >= maxDepth {
		return errDeep
	}
	e.depth++
	defer func() { e.depth-- }()
	t := reflect.TypeOf(v)
	if err, ok := v.(error); ok && e.s.types[t] == nil {
		e.Byte(tError)
		return e.WriteError(err)
	}
	if err := e.desc(t, 0); err != nil {
		return err
	}
	return e.value(reflect.ValueOf(v))
}

// WriteError writes an error body. Registered errors travel by name, errors
// of registered types as values, wrapping errors with their chain, and the
// rest as their message.
func (e *Encoder) WriteError(err error) error {
	if err == nil {
		e.Byte(errNil)
		return nil
	}
	if e.depth >= maxDepth {
		return errDeep
	}
	e.depth++
	defer func() { e.depth-- }()
	if reflect.ValueOf(err).Comparable() {
		if name, ok := e.es.errIDs[err]; ok {
			e.Byte(errRegistered)
			e.String(name)
			return nil
		}
	}
	if e.s.types[reflect.TypeOf(err)] != nil {
		e.Byte(errTyped)
		return e.WriteAny(err)
	}
	var wrapped []error
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		wrapped = u.Unwrap()
	case interface{ Unwrap() error }:
		if w := u.Unwrap(); w != nil {
			wrapped = []error{w}
		}
	}
	if len(wrapped) == 0 {
		e.Byte(errString)
		e.String(err.Error())
		return nil
	}
	e.Byte(errWrapped)
	e.String(err.Error())
	e.Uvarint(uint64(len(wrapped)))
	for _, w := range wrapped {
		if err := e.WriteError(w); err != nil {
			return err
		}
	}
	return nil
}

// desc writes the type descriptor of t.
func (e *Encoder) desc(t reflect.Type, depth int) error {
	if depth > maxDepth {
		return errDeep
	}
	if c, ok := special[t]; ok {
		e.Byte(c)
		return nil
	}
	if te := e.s.types[t]; te != nil {
		e.Byte(tNamed)
		e.String(te.name)
		return nil
	}
	if t.Kind() == reflect.Interface {
		switch t {
		case anyType:
			e.Byte(tAny)
			return nil
		case errorType:
			e.Byte(tErrorIface)
			return nil
		}
		return fmt.Errorf("edf: cannot encode interface type %s: %w", t, gen.ErrUnsupported)
	}
	if t.Name() != "" && t.PkgPath() != "" {
		return fmt.Errorf("edf: type %s is not registered: %w", TypeName(t), gen.ErrUnregistered)
	}
	if c, ok := kindCodes[t.Kind()]; ok {
		e.Byte(c)
		return nil
	}
	switch t.Kind() {
	case reflect.Slice:
		if t == bytesType {
			e.Byte(tBytes)
			return nil
		}
		e.Byte(tSlice)
		return e.desc(t.Elem(), depth+1)
	case reflect.Array:
		e.Byte(tArray)
		e.Uvarint(uint64(t.Len()))
		return e.desc(t.Elem(), depth+1)
	case reflect.Map:
		e.Byte(tMap)
		if err := e.desc(t.Key(), depth+1); err != nil {
			return err
		}
		return e.desc(t.Elem(), depth+1)
	}
	return fmt.Errorf("edf: cannot encode %s (%s): %w", t, t.Kind(), gen.ErrUnsupported)
}

// value writes the body of v; its type was validated by desc or by the
// registration of the enclosing type.
func (e *Encoder) value(v reflect.Value) error {
	if e.depth >= maxDepth {
		return errDeep
	}
	e.depth++
	defer func() { e.depth-- }()
	t := v.Type()
	if c, ok := special[t]; ok {
		return e.special(c, v)
	}
	switch t.Kind() {
	case reflect.Interface:
		if t == errorType {
			if v.IsNil() {
				e.Byte(errNil)
				return nil
			}
			return e.WriteError(v.Interface().(error))
		}
		if v.IsNil() {
			e.Byte(tNil)
			return nil
		}
		return e.WriteAny(v.Interface())
	case reflect.Bool:
		if v.Bool() {
			e.Byte(1)
		} else {
			e.Byte(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.Varint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.Uvarint(v.Uint())
	case reflect.Float32:
		e.Float32(float32(v.Float()))
	case reflect.Float64:
		e.Float64(v.Float())
	case reflect.String:
		e.String(v.String())
	case reflect.Slice:
		if v.IsNil() {
			e.Uvarint(0) // 0 = nil, n+1 = n elements
			return nil
		}
		e.Uvarint(uint64(v.Len()) + 1)
		if t.Elem().Kind() == reflect.Uint8 {
			e.Raw(v.Bytes())
			return nil
		}
		for i := 0; i < v.Len(); i++ {
			if err := e.value(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := e.value(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.IsNil() {
			e.Uvarint(0)
			return nil
		}
		e.Uvarint(uint64(v.Len()) + 1)
		it := v.MapRange()
		for it.Next() {
			if err := e.value(it.Key()); err != nil {
				return err
			}
			if err := e.value(it.Value()); err != nil {
				return err
			}
		}
	case reflect.Struct:
		te := e.s.types[t]
		if te == nil || te.builtin {
			return fmt.Errorf("edf: type %s is not registered: %w", TypeName(t), gen.ErrUnregistered)
		}
		e.Uvarint(uint64(len(te.fields)))
		for _, i := range te.fields {
			if err := e.value(v.Field(i)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("edf: cannot encode %s (%s): %w", t, t.Kind(), gen.ErrUnsupported)
	}
	return nil
}

func (e *Encoder) special(c byte, v reflect.Value) error {
	switch c {
	case tAtom:
		e.String(v.String())
	case tPID:
		e.PID(v.Interface().(gen.PID))
	case tProcessID:
		p := v.Interface().(gen.ProcessID)
		e.String(string(p.Name))
		e.String(string(p.Node))
	case tRef:
		e.Ref(v.Interface().(gen.Ref))
	case tAlias:
		e.Ref(gen.Ref(v.Interface().(gen.Alias)))
	case tEvent:
		ev := v.Interface().(gen.Event)
		e.String(string(ev.Name))
		e.String(string(ev.Node))
	case tTime:
		b, err := v.Interface().(time.Time).MarshalBinary()
		if err != nil {
			return fmt.Errorf("edf: time: %v: %w", err, gen.ErrUnsupported)
		}
		e.Blob(b)
	case tDuration:
		e.Varint(v.Int())
	}
	return nil
}
