package edf

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"ergo.services/ergo/gen"
)

// Registry holds the types, errors and atoms known to the network stacks
// of an OS process (the network layer keeps one Registry per process, as
// the framework's edf package does). Writers copy the current snapshot and
// swap it in, so encoders and decoders read a consistent view without
// taking a lock.
type Registry struct {
	mu   sync.Mutex // serializes writers
	snap atomic.Pointer[snapshot]
}

type typeEntry struct {
	id      uint64
	name    string
	typ     reflect.Type
	fields  []int // struct types: indexes of the encoded fields
	builtin bool
}

type snapshot struct {
	types  map[reflect.Type]*typeEntry
	names  map[string]*typeEntry
	short  map[string]*typeEntry // short Name -> first registered entry
	errs   map[string]error      // wire name -> error
	errIDs map[error]string      // error -> wire name (comparable errors only)
	atoms  map[gen.Atom]struct{}
	nextID uint64
}

// NewRegistry returns a registry with the built-in types (gen identifiers,
// time.Time, time.Duration, the gen system messages, gen.Version and
// gen.Env) and every gen.Err* and gen.TerminateReason* error registered.
func NewRegistry() *Registry {
	s := &snapshot{
		types:  map[reflect.Type]*typeEntry{},
		names:  map[string]*typeEntry{},
		short:  map[string]*typeEntry{},
		errs:   map[string]error{},
		errIDs: map[error]string{},
		atoms:  map[gen.Atom]struct{}{},
	}
	for t := range special {
		s.addType(&typeEntry{name: TypeName(t), typ: t, builtin: true})
	}
	for _, e := range builtinErrors {
		s.errs[e.name] = e.err
		s.errIDs[e.err] = e.name
	}
	r := &Registry{}
	r.snap.Store(s)
	if err := r.RegisterTypes(builtinTypes); err != nil {
		panic(err) // a gen type the codec cannot carry: a bug here
	}
	return r
}

// builtinTypes are gen types registered in every registry, so processes
// can forward system messages to other nodes.
var builtinTypes = []any{
	gen.MessageDownPID{}, gen.MessageDownProcessID{}, gen.MessageDownAlias{},
	gen.MessageDownEvent{}, gen.MessageDownNode{},
	gen.MessageExitPID{}, gen.MessageExitProcessID{}, gen.MessageExitAlias{},
	gen.MessageExitEvent{}, gen.MessageExitNode{},
	gen.MessageEventStart{}, gen.MessageEventStop{}, gen.MessageEvent{},
	gen.Version{}, gen.Env(""),
}

func (s *snapshot) clone() *snapshot {
	n := &snapshot{
		types:  make(map[reflect.Type]*typeEntry, len(s.types)+1),
		names:  make(map[string]*typeEntry, len(s.names)+1),
		short:  make(map[string]*typeEntry, len(s.short)+1),
		errs:   make(map[string]error, len(s.errs)+1),
		errIDs: make(map[error]string, len(s.errIDs)+1),
		atoms:  make(map[gen.Atom]struct{}, len(s.atoms)+1),
		nextID: s.nextID,
	}
	for k, v := range s.types {
		n.types[k] = v
	}
	for k, v := range s.names {
		n.names[k] = v
	}
	for k, v := range s.short {
		n.short[k] = v
	}
	for k, v := range s.errs {
		n.errs[k] = v
	}
	for k, v := range s.errIDs {
		n.errIDs[k] = v
	}
	for k := range s.atoms {
		n.atoms[k] = struct{}{}
	}
	return n
}

func (s *snapshot) addType(e *typeEntry) {
	s.nextID++
	e.id = s.nextID
	s.types[e.typ] = e
	s.names[e.name] = e
	if _, ok := s.short[e.typ.Name()]; !ok {
		s.short[e.typ.Name()] = e
	}
}

// Errors is the set of errors registered at one moment. A connection keeps
// the set of its handshake, as the framework's connections keep the error
// cache exchanged then: an error registered later travels as its message
// (errors.Is fails on the receiver).
type Errors struct{ s *snapshot }

// Errors returns the errors registered now.
func (r *Registry) Errors() Errors { return Errors{r.snap.Load()} }

// RegisterType registers the type of v. Types it refers to (struct fields,
// slice elements, ...) must be registered already, except v's own type.
func (r *Registry) RegisterType(v any) error { return r.RegisterTypes([]any{v}) }

// RegisterTypes registers a batch of types. Types may refer to each other
// in any order. The batch is all-or-nothing: on error nothing is registered.
// A type registered before gives an error wrapping gen.ErrTaken.
func (r *Registry) RegisterTypes(values []any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.snap.Load()
	batch := map[reflect.Type]bool{}
	order := make([]reflect.Type, 0, len(values))
	for _, v := range values {
		t, err := registrable(v)
		if err != nil {
			return err
		}
		if cur.types[t] != nil || cur.names[TypeName(t)] != nil || batch[t] {
			return fmt.Errorf("edf: type %s: %w", TypeName(t), gen.ErrTaken)
		}
		batch[t] = true
		order = append(order, t)
	}
	known := func(t reflect.Type) bool { return cur.types[t] != nil || batch[t] }
	entries := make([]*typeEntry, 0, len(order))
	for _, t := range order {
		fields, err := checkDefinition(t, known)
		if err != nil {
			return err
		}
		entries = append(entries, &typeEntry{name: TypeName(t), typ: t, fields: fields})
	}
	next := cur.clone()
	for _, e := range entries {
		next.addType(e)
	}
	r.snap.Store(next)
	return nil
}

// registrable checks that v is a value of a named type with an encodable kind.
func registrable(v any) (reflect.Type, error) {
	if v == nil {
		return nil, fmt.Errorf("edf: cannot register nil: %w", gen.ErrIncorrect)
	}
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		return nil, fmt.Errorf("edf: register a value, not the pointer %s: %w", t, gen.ErrIncorrect)
	}
	if t.Name() == "" || t.PkgPath() == "" {
		return nil, fmt.Errorf("edf: %s is not a named type: %w", t, gen.ErrIncorrect)
	}
	return t, nil
}

// checkDefinition validates the shape of a type being registered and
// returns, for structs, the indexes of the fields to encode.
func checkDefinition(t reflect.Type, known func(reflect.Type) bool) ([]int, error) {
	if t.Kind() != reflect.Struct {
		if err := checkShape(t, known, 0); err != nil {
			return nil, fmt.Errorf("edf: type %s: %w", TypeName(t), err)
		}
		return nil, nil
	}
	fields := []int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("edf") == "-" {
			continue // explicitly not transferred; zero on the receiver
		}
		if !f.IsExported() {
			return nil, fmt.Errorf("edf: type %s has unexported field %q: %w", TypeName(t), f.Name, gen.ErrUnsupported)
		}
		if err := checkUse(f.Type, known, 0); err != nil {
			return nil, fmt.Errorf("edf: type %s field %s: %w", TypeName(t), f.Name, err)
		}
		fields = append(fields, i)
	}
	return fields, nil
}

// checkUse validates a type used inside a registered type.
func checkUse(t reflect.Type, known func(reflect.Type) bool, depth int) error {
	if _, ok := special[t]; ok || known(t) {
		return nil
	}
	if t.Kind() == reflect.Interface {
		if t == anyType || t == errorType {
			return nil
		}
		return fmt.Errorf("edf: interface %s: %w", t, gen.ErrUnsupported)
	}
	if t.Name() != "" && t.PkgPath() != "" {
		return fmt.Errorf("edf: type %s is not registered: %w", TypeName(t), gen.ErrUnregistered)
	}
	return checkShape(t, known, depth)
}

// checkShape validates the structure of t ignoring its name.
func checkShape(t reflect.Type, known func(reflect.Type) bool, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("edf: type %s nests too deep: %w", t, gen.ErrUnsupported)
	}
	if _, ok := kindCodes[t.Kind()]; ok {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return checkUse(t.Elem(), known, depth+1)
	case reflect.Map:
		if err := checkUse(t.Key(), known, depth+1); err != nil {
			return err
		}
		return checkUse(t.Elem(), known, depth+1)
	}
	return fmt.Errorf("edf: %s (%s) is not supported: %w", t, t.Kind(), gen.ErrUnsupported)
}

// RegisterErrors registers errors so they travel by identity: the receiver
// gets its own registered variable back. The wire name is the message.
func (r *Registry) RegisterErrors(errs []error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.snap.Load().clone()
	for _, e := range errs {
		if e == nil {
			return fmt.Errorf("edf: cannot register a nil error: %w", gen.ErrIncorrect)
		}
		if !reflect.TypeOf(e).Comparable() {
			return fmt.Errorf("edf: error type %T is not comparable: %w", e, gen.ErrUnsupported)
		}
		if _, ok := next.errIDs[e]; ok {
			return fmt.Errorf("edf: error %q: %w", e.Error(), gen.ErrTaken)
		}
		if _, ok := next.errs[e.Error()]; ok {
			return fmt.Errorf("edf: error message %q: %w", e.Error(), gen.ErrTaken)
		}
		next.errs[e.Error()] = e
		next.errIDs[e] = e.Error()
	}
	r.snap.Store(next)
	return nil
}

// RegisterAtoms records atoms. The codec writes atoms in full, so this only
// keeps the list; registering an atom twice is not an error.
func (r *Registry) RegisterAtoms(atoms []gen.Atom) error {
	for _, a := range atoms {
		if a == "" {
			return fmt.Errorf("edf: empty atom: %w", gen.ErrIncorrect)
		}
		if len(a) > 255 {
			return gen.ErrAtomTooLong
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.snap.Load().clone()
	for _, a := range atoms {
		next.atoms[a] = struct{}{}
	}
	r.snap.Store(next)
	return nil
}

// LookupType finds a registered type by canonical or short name.
func (r *Registry) LookupType(name string) (reflect.Type, bool) {
	s := r.snap.Load()
	if e, ok := s.names[name]; ok {
		return e.typ, true
	}
	if !strings.HasPrefix(name, "#") {
		if e, ok := s.short[name]; ok {
			return e.typ, true
		}
	}
	return nil, false
}

// RegisteredTypes lists the registered types, built-ins included, by ID.
func (r *Registry) RegisteredTypes() []gen.RegisteredTypeInfo {
	s := r.snap.Load()
	out := make([]gen.RegisteredTypeInfo, 0, len(s.types))
	for _, e := range s.types {
		out = append(out, gen.RegisteredTypeInfo{
			ID:           e.id,
			Name:         e.name,
			Kind:         e.typ.Kind().String(),
			Schema:       schema(e),
			Proto:        "EDF (stand-in)",
			MinSize:      1,
			SizeVariable: true,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func schema(e *typeEntry) string {
	if e.typ.Kind() != reflect.Struct || e.builtin {
		return e.typ.Kind().String()
	}
	parts := make([]string, 0, len(e.fields))
	for _, i := range e.fields {
		f := e.typ.Field(i)
		parts = append(parts, f.Name+" "+f.Type.String())
	}
	return "struct{" + strings.Join(parts, "; ") + "}"
}
