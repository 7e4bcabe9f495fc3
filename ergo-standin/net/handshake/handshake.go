// Package handshake is the stand-in's handshake (the framework's package of
// the same name, same public API): it authenticates two nodes by their
// shared cookie and negotiates the connection, which is a pool of TCP links.
//
// As in the framework:
//   - Start (dialing side) and Accept prove the cookie both ways with
//     SHA-256 digests over fresh salts; the cookie never travels.
//   - The accepting side decides the pool size (Options.PoolSize, default 3)
//     and advertises the local address of the accepted socket
//     (conn.LocalAddr()) as the only PoolDSN entry: the dialing side opens
//     the extra links, and re-dials lost ones, straight to that address.
//   - Join adds a link to an existing connection by its ConnectionID. An
//     acceptor answers a Join with a correct digest before its network
//     looks for the connection, so a Join for a connection the acceptor no
//     longer has succeeds here and the socket is closed right after.
//
// The wire format is the stand-in's own (it does not interoperate with the
// framework), and there is no TLS.
package handshake // import "ergo.services/ergo/net/handshake"

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
)

const (
	handshakeName    = "EHS (stand-in)"
	handshakeRelease = "R1"

	defaultPoolSize = 3

	magic   byte = 'S'
	version byte = 2

	maxMessage = 1<<16 - 1 // as in the framework: a handshake message fits in 64 KiB
)

// DefaultPoolSize exists in the framework's package as well, where nothing
// reads it either: the default pool is 3 links (Options.PoolSize < 1).
var DefaultPoolSize int = 1

// Options configure a handshake.
type Options struct {
	// PoolSize is the number of TCP links of the connections this handshake
	// accepts (the accepting side decides). Below 1 means 3.
	PoolSize int
	// DisableTLSFingerprint is accepted for compatibility; the stand-in has
	// no TLS.
	DisableTLSFingerprint bool
	// NetworkFlags, when Enable is set, are the flags of an acceptor that
	// uses this handshake and sets no flags of its own.
	NetworkFlags gen.NetworkFlags
	// AtomMapping is returned in HandshakeResult.AtomMapping (the stand-in
	// does not apply atom mapping).
	AtomMapping map[gen.Atom]gen.Atom
}

// ConnectionOptions is the HandshakeResult.Custom of a successful Start or
// Accept (Accept of a Join gives an empty one).
type ConnectionOptions struct {
	PoolSize int
	PoolDSN  []string
}

type handshake struct {
	poolSize int
	flags    gen.NetworkFlags
	mapping  map[gen.Atom]gen.Atom
}

// Create returns a handshake.
func Create(options Options) gen.NetworkHandshake {
	h := &handshake{poolSize: options.PoolSize, flags: options.NetworkFlags}
	if h.poolSize < 1 {
		h.poolSize = defaultPoolSize
	}
	if len(options.AtomMapping) > 0 {
		h.mapping = make(map[gen.Atom]gen.Atom, len(options.AtomMapping))
		for k, v := range options.AtomMapping {
			h.mapping[k] = v
		}
	}
	return h
}

func (h *handshake) NetworkFlags() gen.NetworkFlags { return h.flags }

func (h *handshake) Version() gen.Version {
	return gen.Version{Name: handshakeName, Release: handshakeRelease, License: gen.LicenseMIT}
}

func (h *handshake) atomMapping() map[gen.Atom]gen.Atom {
	if len(h.mapping) == 0 {
		return nil
	}
	m := make(map[gen.Atom]gen.Atom, len(h.mapping))
	for k, v := range h.mapping {
		m[k] = v
	}
	return m
}

// The stand-in's network stack passes a node that also implements these;
// other callers get the plain framework behaviour.
type (
	// admitter decides about an authenticated peer that dials with a full
	// handshake: false means "keep the connection this node dialed".
	admitter interface {
		// settle is true when both ends advertise
		// EnableSimultaneousConnect: only then is a simultaneous
		// connect detected and one dial refused, as in v3.3.0
		StandinAdmit(peer gen.Atom, force, settle bool) bool
	}
	// forcer marks a dial that lost a simultaneous connect and retries.
	forcer interface {
		StandinForce() bool
	}
)

// errKeepOwn wraps gen.ErrTaken: the peer keeps the connection it dialed to
// this node (simultaneous connect), so this dial was refused.
var errKeepOwn = fmt.Errorf("the peer keeps the connection it dialed: %w", gen.ErrTaken)

// message kinds
const (
	kindHello     byte = 1
	kindJoin      byte = 2
	kindIntroduce byte = 3
	kindAccept    byte = 4
)

// accept statuses
const (
	statusOK       byte = 0
	statusKeepOwn  byte = 1 // simultaneous connect: the acceptor's own dial wins
	statusRejected byte = 2
)

type msgHello struct {
	salt, digest string
}

type msgJoin struct {
	node             gen.Atom
	id, salt, digest string
}

type msgIntroduce struct {
	node     gen.Atom
	version  gen.Version
	flags    gen.NetworkFlags
	creation int64
	maxMsg   int
	force    bool
	digest   string
}

type msgAccept struct {
	status   byte
	reason   string
	id       string
	poolSize int
	poolDSN  []string
	digest   string
}

// conn reads and writes handshake messages; bytes read past the last
// message are handed over as the tail.
type conn struct {
	nc net.Conn
	br *bufio.Reader
}

func newConn(nc net.Conn) *conn { return &conn{nc: nc, br: bufio.NewReaderSize(nc, 4096)} }

func (c *conn) tail() []byte {
	n := c.br.Buffered()
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	io.ReadFull(c.br, b)
	return b
}

func (c *conn) write(kind byte, body func(w *edf.Writer)) error {
	w := &edf.Writer{}
	w.Raw([]byte{0, 0, 0, 0, magic, version, kind})
	body(w)
	b := w.Bytes()
	if len(b)-4 > maxMessage {
		return errors.New("handshake message too long")
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := c.nc.Write(b)
	return err
}

// read returns the kind and a reader over the body of the next message.
func (c *conn) read() (byte, *edf.Reader, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxMessage {
		return 0, nil, errors.New("too long handshake message")
	}
	if n < 3 {
		return 0, nil, errors.New("malformed handshake packet")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.br, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	if b[0] != magic {
		return 0, nil, errors.New("malformed handshake packet")
	}
	if b[1] != version {
		return 0, nil, errors.New("mismatch handshake version")
	}
	return b[2], edf.NewReader(b[3:]), nil
}

func (c *conn) writeHello(m msgHello) error {
	return c.write(kindHello, func(w *edf.Writer) {
		w.String(m.salt)
		w.String(m.digest)
	})
}

func readHello(r *edf.Reader) (m msgHello, err error) {
	if m.salt, err = r.String(); err != nil {
		return
	}
	if m.digest, err = r.String(); err != nil {
		return
	}
	return m, r.Done()
}

func (c *conn) writeJoin(m msgJoin) error {
	return c.write(kindJoin, func(w *edf.Writer) {
		w.String(string(m.node))
		w.String(m.id)
		w.String(m.salt)
		w.String(m.digest)
	})
}

func readJoin(r *edf.Reader) (m msgJoin, err error) {
	var node string
	if node, err = r.String(); err != nil {
		return
	}
	m.node = gen.Atom(node)
	for _, p := range []*string{&m.id, &m.salt, &m.digest} {
		if *p, err = r.String(); err != nil {
			return
		}
	}
	return m, r.Done()
}

func (c *conn) writeIntroduce(m msgIntroduce) error {
	return c.write(kindIntroduce, func(w *edf.Writer) {
		w.String(string(m.node))
		for _, s := range []string{m.version.Name, m.version.Release, m.version.Commit, m.version.License} {
			w.String(s)
		}
		w.Uvarint(flagBits(m.flags))
		w.Varint(int64(m.flags.EnableSoftwareKeepAlive))
		w.Varint(m.creation)
		w.Uvarint(uint64(max(m.maxMsg, 0)))
		if m.force {
			w.Byte(1)
		} else {
			w.Byte(0)
		}
		w.String(m.digest)
	})
}

func readIntroduce(r *edf.Reader) (m msgIntroduce, err error) {
	var node string
	if node, err = r.String(); err != nil {
		return
	}
	m.node = gen.Atom(node)
	for _, p := range []*string{&m.version.Name, &m.version.Release, &m.version.Commit, &m.version.License} {
		if *p, err = r.String(); err != nil {
			return
		}
	}
	bits, err := r.Uvarint()
	if err != nil {
		return
	}
	m.flags = flagsFrom(bits)
	ka, err := r.Varint()
	if err != nil {
		return
	}
	m.flags.EnableSoftwareKeepAlive = int(ka)
	if m.creation, err = r.Varint(); err != nil {
		return
	}
	mm, err := r.Uvarint()
	if err != nil {
		return
	}
	if mm > 1<<40 {
		return m, fmt.Errorf("bad max message size %d", mm)
	}
	m.maxMsg = int(mm)
	force, err := r.Byte()
	if err != nil {
		return
	}
	m.force = force == 1
	if m.digest, err = r.String(); err != nil {
		return
	}
	return m, r.Done()
}

func (c *conn) writeAccept(m msgAccept) error {
	return c.write(kindAccept, func(w *edf.Writer) {
		w.Byte(m.status)
		w.String(m.reason)
		w.String(m.id)
		w.Uvarint(uint64(max(m.poolSize, 0)))
		w.Uvarint(uint64(len(m.poolDSN)))
		for _, dsn := range m.poolDSN {
			w.String(dsn)
		}
		w.String(m.digest)
	})
}

func readAccept(r *edf.Reader) (m msgAccept, err error) {
	if m.status, err = r.Byte(); err != nil {
		return
	}
	if m.reason, err = r.String(); err != nil {
		return
	}
	if m.id, err = r.String(); err != nil {
		return
	}
	ps, err := r.Uvarint()
	if err != nil {
		return
	}
	if ps > 1<<16 {
		return m, fmt.Errorf("bad pool size %d", ps)
	}
	m.poolSize = int(ps)
	n, err := r.Uvarint()
	if err != nil {
		return
	}
	if n > uint64(r.Len()) {
		return m, fmt.Errorf("bad pool DSN count %d", n)
	}
	for i := uint64(0); i < n; i++ {
		dsn, err := r.String()
		if err != nil {
			return m, err
		}
		m.poolDSN = append(m.poolDSN, dsn)
	}
	if m.digest, err = r.String(); err != nil {
		return
	}
	return m, r.Done()
}

// expect reads the next message and checks its kind.
func (c *conn) expect(kind byte, what string) (*edf.Reader, error) {
	k, r, err := c.read()
	if err != nil {
		return nil, err
	}
	if k != kind {
		return nil, fmt.Errorf("malformed handshake %s message", what)
	}
	return r, nil
}

// digest is hex(SHA-256(parts joined by ":")).
func digest(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{':'})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func randomString(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func flagList(f *gen.NetworkFlags) []*bool {
	return []*bool{&f.Enable, &f.EnableRemoteSpawn, &f.EnableRemoteApplicationStart, &f.EnableFragmentation,
		&f.EnableProxyTransit, &f.EnableProxyAccept, &f.EnableImportantDelivery, &f.EnableSimultaneousConnect,
		&f.EnableClockSkew, &f.EnableTracing, &f.EnableWrappedErrors, &f.EnableSchemaEvolution}
}

func flagBits(f gen.NetworkFlags) uint64 {
	var b uint64
	for i, on := range flagList(&f) {
		if *on {
			b |= 1 << i
		}
	}
	return b
}

func flagsFrom(b uint64) gen.NetworkFlags {
	var f gen.NetworkFlags
	for i, on := range flagList(&f) {
		*on = b&(1<<i) != 0
	}
	return f
}
