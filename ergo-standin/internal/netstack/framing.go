package netstack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Every message on a link after the handshake (net/handshake, which frames
// its messages the same way) is a frame: a 4-byte big-endian payload length
// followed by the payload.
const (
	frameHeader = 4
	// DefaultMaxMessageSize limits incoming frames when
	// NetworkOptions.MaxMessageSize is 0.
	DefaultMaxMessageSize = 64 << 20

	// msgData is the first payload byte of a data frame after the handshake.
	msgData byte = 1
)

// protocolError marks a peer that broke the protocol (as opposed to a
// connection that merely ended); it is logged as a warning.
type protocolError struct{ err error }

func (e protocolError) Error() string { return e.err.Error() }
func (e protocolError) Unwrap() error { return e.err }

func protoErr(format string, args ...any) error {
	return protocolError{fmt.Errorf(format, args...)}
}

// readFrame reads one frame payload of at most max bytes. The buffer grows
// with the bytes that actually arrive, so a forged length costs nothing.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, protoErr("empty frame")
	}
	if uint64(n) > uint64(max) {
		return nil, protoErr("frame of %d bytes exceeds the limit of %d", n, max)
	}
	if n <= 64<<10 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, truncated(err)
		}
		return b, nil
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, truncated(err)
	}
	return buf.Bytes(), nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		return protoErr("truncated frame: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// sealFrame writes the length header into the frameHeader spare bytes that
// b starts with.
func sealFrame(b []byte) []byte {
	binary.BigEndian.PutUint32(b, uint32(len(b)-frameHeader))
	return b
}
