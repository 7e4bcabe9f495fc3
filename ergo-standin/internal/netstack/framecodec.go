package netstack

import (
	"errors"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
)

// errTrailing: the frame decoded, with bytes left over (the framework
// delivers such a message and logs a warning).
var errTrailing = errors.New("trailing bytes")

// Data frame payload, after the msgData byte:
//
//	kind(1) From(PID) To(any) Target(any) Ref Priority(varint) Message(any) Err(error)

// encodeFrame encodes f as a complete wire frame (length header included).
// It runs in the sender's goroutine so encoding errors reach the caller.
// Registered errors travel by identity if they are in errs (the errors of
// the connection's handshake).
func encodeFrame(reg *edf.Registry, errs edf.Errors, f Frame) ([]byte, error) {
	e := reg.NewEncoderFor(make([]byte, frameHeader, 128), errs)
	e.Byte(msgData)
	e.Byte(byte(f.Kind))
	e.PID(f.From)
	if err := e.WriteAny(f.To); err != nil {
		return nil, err
	}
	if err := e.WriteAny(f.Target); err != nil {
		return nil, err
	}
	e.Ref(f.Ref)
	e.Varint(int64(f.Priority))
	if err := e.WriteAny(f.Message); err != nil {
		return nil, err
	}
	if err := e.WriteError(f.Err); err != nil {
		return nil, err
	}
	return sealFrame(e.Bytes()), nil
}

// decodeFrame decodes a frame payload (without the length header). It never
// panics on malformed input. With errTrailing the frame is complete.
func decodeFrame(reg *edf.Registry, errs edf.Errors, payload []byte) (Frame, error) {
	var f Frame
	d := reg.NewDecoderFor(payload, errs)
	t, err := d.Byte()
	if err != nil {
		return f, err
	}
	if t != msgData {
		return f, protoErr("unknown message type %d", t)
	}
	kind, err := d.Byte()
	if err != nil {
		return f, err
	}
	if kind < byte(FrameSend) || kind > byte(frameLast) {
		return f, protoErr("unknown frame kind %d", kind)
	}
	f.Kind = FrameKind(kind)
	if f.From, err = d.PID(); err != nil {
		return f, err
	}
	if f.To, err = d.ReadAny(); err != nil {
		return f, err
	}
	if f.Target, err = d.ReadAny(); err != nil {
		return f, err
	}
	if f.Ref, err = d.Ref(); err != nil {
		return f, err
	}
	prio, err := d.Varint()
	if err != nil {
		return f, err
	}
	f.Priority = gen.MessagePriority(prio)
	if f.Message, err = d.ReadAny(); err != nil {
		return f, err
	}
	if f.Err, err = d.ReadError(); err != nil {
		return f, err
	}
	if d.Done() != nil {
		return f, errTrailing
	}
	return f, nil
}

// orderOf is the order byte the framework's sender puts in a frame's
// header for the receiving side (net/proto connection.go): the
// recipient's process ID for a PID or an alias, the sender's for a name,
// an event or a subscription, none (0) for the notifications of a
// termination and the replies to monitor and link requests. A frame whose
// head does not decode has none; its handler reports it.
func orderOf(reg *edf.Registry, errs edf.Errors, payload []byte) uint8 {
	d := reg.NewDecoderFor(payload, errs)
	if t, err := d.Byte(); err != nil || t != msgData {
		return 0
	}
	kind, err := d.Byte()
	if err != nil {
		return 0
	}
	switch FrameKind(kind) {
	case FrameDown, FrameExit, FrameReply:
		return 0
	}
	from, err := d.PID()
	if err != nil {
		return 0
	}
	if FrameKind(kind) == FrameEvent {
		return uint8(from.ID % 255)
	}
	to, err := d.ReadAny()
	if err != nil {
		return 0
	}
	switch to := to.(type) {
	case gen.PID:
		return uint8(to.ID % 255)
	case gen.Alias:
		return uint8(to.ID[1] % 255)
	}
	return uint8(from.ID % 255)
}
