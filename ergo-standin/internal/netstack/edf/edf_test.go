package edf

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

type color int

type point struct {
	X, Y int
}

type shape struct {
	Name   string
	Points []point
	Tags   map[string]point
	Color  color
	Extra  any
	Err    error
	Skip   chan int `edf:"-"`
}

type tree struct {
	Value    int
	Children []tree
}

type names []string

type hidden struct {
	Public  int
	private int
}

type myErr struct{ Code int }

func (e myErr) Error() string { return fmt.Sprintf("code %d", e.Code) }

func newTestRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	// shape first: the batch resolves its dependencies regardless of order
	if err := r.RegisterTypes([]any{shape{}, point{}, color(0), tree{}, names{}, myErr{}}); err != nil {
		t.Fatal(err)
	}
	return r
}

func roundTrip(t *testing.T, r *Registry, v any) any {
	t.Helper()
	e := r.NewEncoder(nil)
	if err := e.WriteAny(v); err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	d := r.NewDecoder(e.Bytes())
	out, err := d.ReadAny()
	if err != nil {
		t.Fatalf("decode %#v: %v", v, err)
	}
	if err := d.Done(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	r := newTestRegistry(t)
	now := time.Now()
	values := []any{
		nil, true, false, int(-5), int8(-8), int16(300), int32(-70000), int64(1 << 60),
		uint(5), uint8(255), uint16(65535), uint32(1 << 31), uint64(1 << 63),
		float32(1.5), float64(-2.25), "hello", []byte("bytes"), []byte{}, []byte(nil),
		gen.Atom("a@b"), gen.PID{Node: "n@h", ID: 1000, Creation: 7},
		gen.ProcessID{Name: "p", Node: "n@h"}, gen.Ref{Node: "n@h", Creation: 2, ID: [3]uint64{1, 2, 3}},
		gen.Alias{Node: "n@h", ID: [3]uint64{4, 5, 6}}, gen.Event{Name: "e", Node: "n@h"},
		time.Duration(42), []int{1, 2, 3}, [3]string{"a", "b", "c"}, map[string]int{"a": 1},
		map[gen.Atom][]gen.PID{"x": {{Node: "q", ID: 1}}}, []any{1, "two", nil, gen.Atom("three")},
		map[any]any{1: "one", "two": 2.0}, point{1, 2}, color(3), names{"x", "y"},
		[]point{{1, 2}, {3, 4}}, map[point]color{{5, 6}: 7},
		shape{Name: "s", Points: []point{{1, 1}}, Tags: map[string]point{"t": {2, 2}}, Color: 1, Extra: point{9, 9}},
		tree{Value: 1, Children: []tree{{Value: 2}, {Value: 3, Children: []tree{{Value: 4}}}}},
		myErr{Code: 5},
		gen.MessageDownPID{PID: gen.PID{Node: "n", ID: 1}, Reason: gen.ErrNoConnection},
		gen.MessageEvent{Event: gen.Event{Name: "e"}, Timestamp: 5, Message: point{1, 1}},
		gen.Version{Name: "v"}, gen.Env("E"),
	}
	for _, v := range values {
		got := roundTrip(t, r, v)
		if !reflect.DeepEqual(v, got) {
			t.Errorf("round trip %T: sent %#v, got %#v", v, v, got)
		}
	}
	got := roundTrip(t, r, now).(time.Time)
	if !got.Equal(now) {
		t.Errorf("time: %v != %v", got, now)
	}
}

func TestErrors(t *testing.T) {
	r := newTestRegistry(t)
	mine := errors.New("mine")
	if err := r.RegisterErrors([]error{mine}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []error{gen.ErrProcessUnknown, gen.ErrAliasOwner, gen.ErrEventOwner, gen.TerminateReasonShutdown, mine} {
		if got := roundTrip(t, r, e); got != e {
			t.Errorf("%v did not keep identity: %#v", e, got)
		}
	}
	plain := errors.New("plain")
	got := roundTrip(t, r, plain).(error)
	if got.Error() != "plain" || got == plain {
		t.Errorf("plain error: %v", got)
	}
	wrapped := fmt.Errorf("context: %w", gen.ErrTimeout)
	got = roundTrip(t, r, wrapped).(error)
	if got.Error() != wrapped.Error() || !errors.Is(got, gen.ErrTimeout) {
		t.Errorf("wrapped error: %v", got)
	}
	if got := roundTrip(t, r, shape{Err: gen.ErrNoRoute}).(shape); got.Err != gen.ErrNoRoute {
		t.Errorf("error field: %v", got.Err)
	}
	var typed error = myErr{Code: 3}
	if got := roundTrip(t, r, []error{typed, nil}).([]error); got[0] != typed || got[1] != nil {
		t.Errorf("typed error: %#v", got)
	}
	if err := r.RegisterErrors([]error{errors.New("mine")}); !errors.Is(err, gen.ErrTaken) {
		t.Errorf("duplicate message: %v", err)
	}
}

func TestRegistration(t *testing.T) {
	r := NewRegistry()
	if err := r.RegisterType(shape{}); !errors.Is(err, gen.ErrUnregistered) {
		t.Errorf("nested type not registered: %v", err)
	}
	if err := r.RegisterType(&point{}); !errors.Is(err, gen.ErrIncorrect) {
		t.Errorf("pointer: %v", err)
	}
	if err := r.RegisterType(hidden{}); !errors.Is(err, gen.ErrUnsupported) {
		t.Errorf("unexported field: %v", err)
	}
	if err := r.RegisterType(5); !errors.Is(err, gen.ErrIncorrect) {
		t.Errorf("unnamed: %v", err)
	}
	if err := r.RegisterType(point{}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterType(point{}); !errors.Is(err, gen.ErrTaken) {
		t.Errorf("duplicate: %v", err)
	}
	if err := r.RegisterType(gen.PID{}); !errors.Is(err, gen.ErrTaken) {
		t.Errorf("built-in: %v", err)
	}
	if err := r.RegisterTypes([]any{tree{}, hidden{}}); err == nil {
		t.Error("batch with a bad type accepted")
	}
	if _, ok := r.LookupType("tree"); ok {
		t.Error("failed batch registered a type")
	}
	if typ, ok := r.LookupType("#ergo.services/ergo/internal/netstack/edf/point"); !ok || typ != reflect.TypeOf(point{}) {
		t.Errorf("lookup by canonical name: %v %v", typ, ok)
	}
	if typ, ok := r.LookupType("point"); !ok || typ != reflect.TypeOf(point{}) {
		t.Errorf("lookup by short name: %v %v", typ, ok)
	}
	found := false
	for _, info := range r.RegisteredTypes() {
		found = found || info.Name == "#ergo.services/ergo/internal/netstack/edf/point"
	}
	if !found {
		t.Error("RegisteredTypes misses point")
	}
}

func TestEncodeErrors(t *testing.T) {
	r := NewRegistry()
	cases := []struct {
		v    any
		want error
	}{
		{point{}, gen.ErrUnregistered},
		{[]point{}, gen.ErrUnregistered},
		{map[string]any{"p": point{}}, gen.ErrUnregistered},
		{&point{}, gen.ErrUnsupported},
		{struct{ A int }{}, gen.ErrUnsupported},
		{make(chan int), gen.ErrUnsupported},
	}
	for _, c := range cases {
		err := r.NewEncoder(nil).WriteAny(c.v)
		if !errors.Is(err, c.want) {
			t.Errorf("%T: got %v, want %v", c.v, err, c.want)
		}
	}
	err := r.NewEncoder(nil).WriteAny(point{})
	if err == nil || !strings.Contains(err.Error(), "point") {
		t.Errorf("error does not name the type: %v", err)
	}
	loop := map[string]any{}
	loop["self"] = loop
	if err := r.NewEncoder(nil).WriteAny(loop); err == nil {
		t.Error("cyclic value encoded")
	}
}

func TestUnknownTypeOnReceiver(t *testing.T) {
	sender := newTestRegistry(t)
	e := sender.NewEncoder(nil)
	if err := e.WriteAny(point{1, 2}); err != nil {
		t.Fatal(err)
	}
	_, err := NewRegistry().NewDecoder(e.Bytes()).ReadAny()
	if !errors.Is(err, ErrUnknownType) {
		t.Errorf("got %v", err)
	}
}

func TestZeroSizeArrays(t *testing.T) {
	r := NewRegistry()
	// [48]...[48][0]bool: a few bytes that would demand 48^20 iterations
	b := []byte{}
	for i := 0; i < 20; i++ {
		b = append(b, tArray, 48)
	}
	b = append(b, tArray, 0, tBool)
	if _, err := r.NewDecoder(b).ReadAny(); err == nil {
		t.Fatal("accepted an array of zero-size elements")
	}
	if got := roundTrip(t, r, [0]int{}); got != [0]int{} {
		t.Fatal("empty array")
	}
}

func TestTruncated(t *testing.T) {
	r := newTestRegistry(t)
	e := r.NewEncoder(nil)
	v := shape{Name: "s", Points: []point{{1, 1}}, Tags: map[string]point{"t": {2, 2}}, Extra: []any{1, "x"}, Err: errors.New("x")}
	if err := e.WriteAny(v); err != nil {
		t.Fatal(err)
	}
	b := e.Bytes()
	for i := 0; i < len(b); i++ {
		if _, err := r.NewDecoder(b[:i]).ReadAny(); err == nil {
			t.Errorf("prefix of %d bytes decoded", i)
		}
	}
}

func FuzzReadAny(f *testing.F) {
	r := NewRegistry()
	if err := r.RegisterTypes([]any{shape{}, point{}, color(0), tree{}, names{}, myErr{}}); err != nil {
		f.Fatal(err)
	}
	for _, v := range []any{1, "s", []any{1, nil}, map[any]any{1: 2}, point{1, 2}, shape{Extra: tree{}}, gen.ErrTimeout, [2][2]int{}} {
		e := r.NewEncoder(nil)
		if err := e.WriteAny(v); err != nil {
			f.Fatal(err)
		}
		f.Add(e.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = r.NewDecoder(b).ReadAny()
	})
}
