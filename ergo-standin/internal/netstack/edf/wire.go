package edf

import (
	"encoding/binary"
	"fmt"
	"math"

	"ergo.services/ergo/gen"
)

// errShort is returned when the input ends in the middle of a value.
var errShort = fmt.Errorf("edf: truncated input: %w", gen.ErrMalformed)

// Writer appends primitive values to a byte slice. The zero value is ready.
type Writer struct {
	buf []byte
}

// Bytes returns the encoded bytes.
func (w *Writer) Bytes() []byte { return w.buf }

// Reset keeps the buffer but drops its content.
func (w *Writer) Reset(prefix []byte) { w.buf = append(w.buf[:0], prefix...) }

// Byte appends one byte.
func (w *Writer) Byte(b byte) { w.buf = append(w.buf, b) }

// Uvarint appends an unsigned varint.
func (w *Writer) Uvarint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }

// Varint appends a zig-zag signed varint.
func (w *Writer) Varint(v int64) { w.buf = binary.AppendVarint(w.buf, v) }

// Raw appends bytes as they are.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }

// String appends a length-prefixed string.
func (w *Writer) String(s string) {
	w.Uvarint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// Blob appends a length-prefixed byte slice.
func (w *Writer) Blob(b []byte) {
	w.Uvarint(uint64(len(b)))
	w.buf = append(w.buf, b...)
}

// Float64 appends 8 bytes of IEEE 754.
func (w *Writer) Float64(f float64) {
	w.buf = binary.BigEndian.AppendUint64(w.buf, math.Float64bits(f))
}

// Float32 appends 4 bytes of IEEE 754.
func (w *Writer) Float32(f float32) {
	w.buf = binary.BigEndian.AppendUint32(w.buf, math.Float32bits(f))
}

// PID appends a gen.PID.
func (w *Writer) PID(p gen.PID) {
	w.String(string(p.Node))
	w.Uvarint(p.ID)
	w.Varint(p.Creation)
}

// Ref appends a gen.Ref.
func (w *Writer) Ref(r gen.Ref) {
	w.String(string(r.Node))
	w.Varint(r.Creation)
	for _, id := range r.ID {
		w.Uvarint(id)
	}
}

// Reader consumes primitive values from a byte slice. Every method checks
// bounds, so malformed input yields an error and never a panic.
type Reader struct {
	buf []byte
	off int
}

// NewReader reads from b.
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// Len returns the number of unread bytes.
func (r *Reader) Len() int { return len(r.buf) - r.off }

// Byte reads one byte.
func (r *Reader) Byte() (byte, error) {
	if r.off >= len(r.buf) {
		return 0, errShort
	}
	b := r.buf[r.off]
	r.off++
	return b, nil
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.buf[r.off:])
	if n <= 0 {
		return 0, fmt.Errorf("edf: bad varint: %w", gen.ErrMalformed)
	}
	r.off += n
	return v, nil
}

// Varint reads a zig-zag signed varint.
func (r *Reader) Varint() (int64, error) {
	v, n := binary.Varint(r.buf[r.off:])
	if n <= 0 {
		return 0, fmt.Errorf("edf: bad varint: %w", gen.ErrMalformed)
	}
	r.off += n
	return v, nil
}

// length reads a length and checks it against the unread input, so a forged
// length cannot trigger a huge allocation.
func (r *Reader) length(minElem int) (int, error) {
	n, err := r.Uvarint()
	if err != nil {
		return 0, err
	}
	limit := uint64(r.Len())
	if minElem == 0 {
		limit = maxZeroSizeElems
	}
	if n > limit {
		return 0, fmt.Errorf("edf: length %d exceeds input: %w", n, gen.ErrMalformed)
	}
	return int(n), nil
}

// Raw reads n bytes without copying.
func (r *Reader) Raw(n int) ([]byte, error) {
	if n < 0 || n > r.Len() {
		return nil, errShort
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b, nil
}

// String reads a length-prefixed string.
func (r *Reader) String() (string, error) {
	n, err := r.length(1)
	if err != nil {
		return "", err
	}
	b, err := r.Raw(n)
	return string(b), err
}

// Blob reads a length-prefixed byte slice (a copy).
func (r *Reader) Blob() ([]byte, error) {
	n, err := r.length(1)
	if err != nil {
		return nil, err
	}
	b, err := r.Raw(n)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, b...), nil
}

// Float64 reads 8 bytes of IEEE 754.
func (r *Reader) Float64() (float64, error) {
	b, err := r.Raw(8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}

// Float32 reads 4 bytes of IEEE 754.
func (r *Reader) Float32() (float32, error) {
	b, err := r.Raw(4)
	if err != nil {
		return 0, err
	}
	return math.Float32frombits(binary.BigEndian.Uint32(b)), nil
}

// PID reads a gen.PID.
func (r *Reader) PID() (gen.PID, error) {
	var p gen.PID
	node, err := r.String()
	if err != nil {
		return p, err
	}
	p.Node = gen.Atom(node)
	if p.ID, err = r.Uvarint(); err != nil {
		return p, err
	}
	p.Creation, err = r.Varint()
	return p, err
}

// Ref reads a gen.Ref.
func (r *Reader) Ref() (gen.Ref, error) {
	var ref gen.Ref
	node, err := r.String()
	if err != nil {
		return ref, err
	}
	ref.Node = gen.Atom(node)
	if ref.Creation, err = r.Varint(); err != nil {
		return ref, err
	}
	for i := range ref.ID {
		if ref.ID[i], err = r.Uvarint(); err != nil {
			return ref, err
		}
	}
	return ref, nil
}

// Done reports an error when unread bytes remain.
func (r *Reader) Done() error {
	if r.Len() != 0 {
		return fmt.Errorf("edf: %d trailing bytes: %w", r.Len(), gen.ErrMalformed)
	}
	return nil
}
