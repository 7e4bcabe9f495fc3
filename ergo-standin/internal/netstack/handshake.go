package netstack

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
)

// The handshake (4 frames) authenticates both sides without sending the
// cookie:
//
//	dialer   -> acceptor  hello:     magic, intro(dialer), wanted name, saltD
//	acceptor -> dialer    challenge: status, intro(acceptor), saltA, H(saltD:cookie)
//	dialer   -> acceptor  proof:     H(saltA:challengeDigest:cookie)
//	acceptor -> dialer    verdict:   accepted | use the other connection | rejected
//
// Each side proves the cookie over a salt the other side just made up, so
// recorded digests cannot be replayed. The acceptor decides about
// simultaneous connects only after the proof, so strangers change nothing.
const (
	hsMagic   = "ESH1" // ergo stand-in handshake, version 1
	saltSize  = 32
	hsOK      = 0
	hsExists  = 1 // simultaneous connect: the connection dialed by the other side wins
	hsRejects = 2 // + reason
)

var (
	// HandshakeVersion is reported in RemoteNodeInfo and NetworkInfo.
	HandshakeVersion = gen.Version{Name: "EHS (stand-in)", Release: "1.0", License: gen.LicenseMIT}
	// ProtoVersion is reported in RemoteNodeInfo and NetworkInfo.
	ProtoVersion = gen.Version{Name: "ENP/EDF (stand-in)", Release: "1.0", License: gen.LicenseMIT}
	// nodeVersion is what a stack announces as the node version: Options
	// does not carry the node's own Version.
	nodeVersion = gen.Version{Name: "Ergo Framework", Release: "3.2.0-development", License: gen.LicenseMIT}
)

// intro is what a node tells its peer about itself.
type intro struct {
	name     gen.Atom
	creation int64
	start    int64 // unix seconds the stack started
	maxMsg   int   // 0 = DefaultMaxMessageSize
	version  gen.Version
	flags    gen.NetworkFlags
}

func (s *Stack) intro() intro {
	s.mu.Lock()
	defer s.mu.Unlock()
	return intro{name: s.name, creation: s.opts.Creation, start: s.started.Unix(), maxMsg: s.maxMsg, version: nodeVersion, flags: s.flags}
}

func writeIntro(w *edf.Writer, in intro) {
	w.String(string(in.name))
	w.Varint(in.creation)
	w.Varint(in.start)
	w.Uvarint(uint64(max(in.maxMsg, 0)))
	for _, v := range []string{in.version.Name, in.version.Release, in.version.Commit, in.version.License} {
		w.String(v)
	}
	w.Uvarint(flagBits(in.flags))
	w.Varint(int64(in.flags.EnableSoftwareKeepAlive))
}

func readIntro(r *edf.Reader) (intro, error) {
	var in intro
	name, err := r.String()
	if err != nil {
		return in, err
	}
	in.name = gen.Atom(name)
	if in.creation, err = r.Varint(); err != nil {
		return in, err
	}
	if in.start, err = r.Varint(); err != nil {
		return in, err
	}
	mm, err := r.Uvarint()
	if err != nil {
		return in, err
	}
	if mm > 1<<40 {
		return in, fmt.Errorf("bad max message size %d", mm)
	}
	in.maxMsg = int(mm)
	v := []*string{&in.version.Name, &in.version.Release, &in.version.Commit, &in.version.License}
	for _, p := range v {
		if *p, err = r.String(); err != nil {
			return in, err
		}
	}
	bits, err := r.Uvarint()
	if err != nil {
		return in, err
	}
	in.flags = flagsFrom(bits)
	ka, err := r.Varint()
	in.flags.EnableSoftwareKeepAlive = int(ka)
	return in, err
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

func flagList(f *gen.NetworkFlags) []*bool {
	return []*bool{&f.Enable, &f.EnableRemoteSpawn, &f.EnableRemoteApplicationStart, &f.EnableFragmentation,
		&f.EnableProxyTransit, &f.EnableProxyAccept, &f.EnableImportantDelivery, &f.EnableSimultaneousConnect,
		&f.EnableClockSkew, &f.EnableTracing, &f.EnableWrappedErrors, &f.EnableSchemaEvolution}
}

func newSalt() []byte {
	b := make([]byte, saltSize)
	rand.Read(b)
	return b
}

// digest proves the cookie over the peer's salt: H(salt:cookie).
func digest(salt []byte, cookie string) []byte {
	h := sha256.Sum256([]byte(hex.EncodeToString(salt) + ":" + cookie))
	return h[:]
}

// digest2 answers the challenge: H(salt:peerDigest:cookie).
func digest2(salt, peerDigest []byte, cookie string) []byte {
	h := sha256.Sum256([]byte(hex.EncodeToString(salt) + ":" + hex.EncodeToString(peerDigest) + ":" + cookie))
	return h[:]
}

// hsConn carries handshake frames; the buffered reader is handed over to the
// connection afterwards because it may already hold the first data frames.
type hsConn struct {
	nc  net.Conn
	br  *bufio.Reader
	max int
}

func newHSConn(nc net.Conn, max int) *hsConn {
	if max <= 0 {
		max = handshakeMaxMessageSize
	}
	return &hsConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), max: max}
}

func (h *hsConn) send(build func(w *edf.Writer)) error {
	w := &edf.Writer{}
	w.Raw(make([]byte, frameHeader))
	build(w)
	_, err := h.nc.Write(sealFrame(w.Bytes()))
	return err
}

func (h *hsConn) recv() (*edf.Reader, error) {
	b, err := readFrame(h.br, h.max)
	if err != nil {
		return nil, err
	}
	return edf.NewReader(b), nil
}

func readSalt(r *edf.Reader) ([]byte, error) {
	b, err := r.Raw(saltSize)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, b...), nil
}

func readDigest(r *edf.Reader) ([]byte, error) {
	b, err := r.Raw(sha256.Size)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, b...), nil
}

// dialHandshake runs the dialer side. It returns the peer's intro and the
// acceptor's verdict (hsOK or hsExists).
func dialHandshake(h *hsConn, me intro, want gen.Atom, cookie string, timeout time.Duration) (intro, byte, error) {
	h.nc.SetDeadline(time.Now().Add(timeout))
	defer h.nc.SetDeadline(time.Time{})
	saltD := newSalt()
	err := h.send(func(w *edf.Writer) {
		w.Raw([]byte(hsMagic))
		writeIntro(w, me)
		w.String(string(want))
		w.Raw(saltD)
	})
	if err != nil {
		return intro{}, 0, err
	}
	r, err := h.recv()
	if err != nil {
		return intro{}, 0, err
	}
	status, err := r.Byte()
	if err != nil {
		return intro{}, 0, err
	}
	if status == hsRejects {
		reason, _ := r.String()
		return intro{}, 0, fmt.Errorf("rejected by %s: %s", want, reason)
	}
	peer, err := readIntro(r)
	if err != nil {
		return intro{}, 0, err
	}
	saltA, err := readSalt(r)
	if err != nil {
		return intro{}, 0, err
	}
	digestA, err := readDigest(r)
	if err != nil {
		return intro{}, 0, err
	}
	if peer.name != want {
		return intro{}, 0, fmt.Errorf("dialed %s but the peer is %s", want, peer.name)
	}
	// Answer even when the acceptor failed the check, so the acceptor can
	// log the cookie mismatch too; the answer proves nothing without the
	// cookie.
	err = h.send(func(w *edf.Writer) { w.Raw(digest2(saltA, digestA, cookie)) })
	if subtle.ConstantTimeCompare(digestA, digest(saltD, cookie)) != 1 {
		return intro{}, 0, fmt.Errorf("%s failed the cookie check", want)
	}
	if err != nil {
		return intro{}, 0, err
	}
	if r, err = h.recv(); err != nil {
		return intro{}, 0, err
	}
	verdict, err := r.Byte()
	if err != nil {
		return intro{}, 0, err
	}
	switch verdict {
	case hsOK, hsExists:
		return peer, verdict, nil
	}
	reason, _ := r.String()
	return intro{}, 0, fmt.Errorf("rejected by %s: %s", want, reason)
}

// acceptHello reads the dialer's hello and challenges it.
func acceptHello(h *hsConn, me intro, cookie string) (peer intro, saltA, digestA []byte, err error) {
	r, err := h.recv()
	if err != nil {
		return peer, nil, nil, err
	}
	magic, err := r.Raw(len(hsMagic))
	if err != nil || string(magic) != hsMagic {
		return peer, nil, nil, protoErr("not a handshake (bad magic)")
	}
	if peer, err = readIntro(r); err != nil {
		return peer, nil, nil, protoErr("bad hello: %v", err)
	}
	want, err := r.String()
	if err != nil {
		return peer, nil, nil, protoErr("bad hello: %v", err)
	}
	saltD, err := readSalt(r)
	if err != nil {
		return peer, nil, nil, protoErr("bad hello: %v", err)
	}
	if gen.Atom(want) != me.name {
		h.send(func(w *edf.Writer) {
			w.Byte(hsRejects)
			w.String("this node is " + string(me.name))
		})
		return peer, nil, nil, protoErr("%s dialed %s, this node is %s", peer.name, want, me.name)
	}
	if peer.name == "" || peer.name == me.name {
		return peer, nil, nil, protoErr("bad peer name %q", peer.name)
	}
	saltA = newSalt()
	digestA = digest(saltD, cookie)
	err = h.send(func(w *edf.Writer) {
		w.Byte(hsOK)
		writeIntro(w, me)
		w.Raw(saltA)
		w.Raw(digestA)
	})
	return peer, saltA, digestA, err
}

// acceptProof checks the dialer's answer to the challenge.
func acceptProof(h *hsConn, saltA, digestA []byte, cookie string) error {
	r, err := h.recv()
	if err != nil {
		return err
	}
	proof, err := readDigest(r)
	if err != nil {
		return protoErr("bad proof: %v", err)
	}
	if subtle.ConstantTimeCompare(proof, digest2(saltA, digestA, cookie)) != 1 {
		return protoErr("cookie mismatch")
	}
	return nil
}

func sendVerdict(h *hsConn, verdict byte, reason string) error {
	return h.send(func(w *edf.Writer) {
		w.Byte(verdict)
		if verdict == hsRejects {
			w.String(reason)
		}
	})
}
