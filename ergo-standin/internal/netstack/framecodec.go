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
