package netstack

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
)

// FuzzDecode feeds arbitrary payloads to the frame decoder; it must return
// an error or a frame, never panic or hang.
func FuzzDecode(f *testing.F) {
	reg := edf.NewRegistry()
	if err := reg.RegisterTypes([]any{order{}, item{}}); err != nil {
		f.Fatal(err)
	}
	p := gen.PID{Node: "a@localhost", ID: 5, Creation: 9}
	seeds := []Frame{
		{Kind: FrameSend, From: p, To: p, Message: "hello"},
		{Kind: FrameRequest, From: p, To: gen.ProcessID{Name: "n", Node: "b@localhost"}, Ref: gen.Ref{Node: "a", ID: [3]uint64{1, 2, 3}}, Message: []any{1, 2.5, nil}},
		{Kind: FrameResponse, To: p, Err: gen.ErrTimeout},
		{Kind: FrameDown, From: p, To: p, Target: gen.Alias{Node: "x"}, Err: gen.TerminateReasonShutdown},
		{Kind: FrameSend, Message: order{ID: 1, Items: []item{{"i", 1}}, Meta: map[string]any{"k": map[int][]byte{1: {2}}}, When: time.Unix(1, 0)}},
		{Kind: FrameSend, Message: [2][]gen.Event{{{Name: "e"}}}},
	}
	for _, s := range seeds {
		b, err := encodeFrame(reg, reg.Errors(), s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[frameHeader:])
	}
	f.Add([]byte{})
	f.Add([]byte{msgData, byte(FrameSend), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 25, 25, 25})
	f.Fuzz(func(t *testing.T, payload []byte) {
		_, _ = decodeFrame(reg, reg.Errors(), payload)
	})
}
