package leader

import "encoding/binary"

// The hubs' wire format. A msgBeats or msgBeatAcks holds one record per
// election, a thousand or more of them, twice per heartbeat interval and
// node pair. Encoded as slices of structs, the framework's codec walked
// every field of every record by reflection on both ends, and the decoder
// allocated a string per ClusterID: that was most of the hubs' CPU time at
// a thousand elections. So the records travel packed in one []byte, which
// the codec copies as it is, and the receiving hub reads them in place,
// looking each ClusterID up without copying it.
//
// A record is a sequence of unsigned varints (encoding/binary), a
// ClusterID as its length followed by its bytes:
//
//	beat: ClusterID, Term, LeaderID, Round
//	ack:  ClusterID, Term, Round, FollowerID
//
// A peer can send anything: a record that does not parse (truncated, a
// varint that overflows, a ClusterID longer than maxWireClusterID) ends the
// reading of the message. The records before it were well formed and are
// used; the rest is dropped and counted (ergo:hub_malformed), never guessed
// at. Nothing a peer sends makes the reader panic or allocate more than the
// message's own size.

// maxWireClusterID bounds a ClusterID read off the wire. Options does not
// limit a ClusterID's length; one this long is no user's.
const maxWireClusterID = 1 << 16

// appendBeat packs one election's round for msgBeats.
func appendBeat(buf []byte, b beatEntry) []byte {
	buf = appendWireString(buf, b.ClusterID)
	buf = binary.AppendUvarint(buf, b.Term)
	buf = binary.AppendUvarint(buf, b.LeaderID)
	return binary.AppendUvarint(buf, b.Round)
}

// appendAck packs one follower's acknowledgement for msgBeatAcks.
func appendAck(buf []byte, a beatAck) []byte {
	buf = appendWireString(buf, a.ClusterID)
	buf = binary.AppendUvarint(buf, a.Term)
	buf = binary.AppendUvarint(buf, a.Round)
	return binary.AppendUvarint(buf, a.FollowerID)
}

func appendWireString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// wireBeat and wireAck are records as read: cluster aliases the message.
type wireBeat struct {
	cluster               []byte
	term, leaderID, round uint64
}

type wireAck struct {
	cluster                 []byte
	term, round, followerID uint64
}

// wireReader reads packed records off a message, in place.
type wireReader struct {
	buf       []byte
	malformed bool // a record did not parse; the rest was dropped
}

// more reports whether another record may follow.
func (r *wireReader) more() bool { return r.malformed == false && len(r.buf) > 0 }

func (r *wireReader) uvarint() uint64 {
	if r.malformed {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *wireReader) bytes() []byte {
	n := r.uvarint()
	if r.malformed || n > maxWireClusterID || n > uint64(len(r.buf)) {
		r.fail()
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}

func (r *wireReader) fail() {
	r.malformed, r.buf = true, nil
}

// beat reads the next beat record; ok is false when there is none or it
// did not parse.
func (r *wireReader) beat() (b wireBeat, ok bool) {
	if r.more() == false {
		return b, false
	}
	b.cluster = r.bytes()
	b.term = r.uvarint()
	b.leaderID = r.uvarint()
	b.round = r.uvarint()
	return b, r.malformed == false
}

// ack reads the next ack record; ok is false when there is none or it did
// not parse.
func (r *wireReader) ack() (a wireAck, ok bool) {
	if r.more() == false {
		return a, false
	}
	a.cluster = r.bytes()
	a.term = r.uvarint()
	a.round = r.uvarint()
	a.followerID = r.uvarint()
	return a, r.malformed == false
}

// packBeats and packAcks build whole messages (tests, and the hub's
// callers that have the records at hand).
func packBeats(beats ...beatEntry) msgBeats {
	var buf []byte
	for _, b := range beats {
		buf = appendBeat(buf, b)
	}
	return msgBeats{Beats: buf}
}

func packAcks(acks []beatAck, unserved []string) msgBeatAcks {
	var buf []byte
	for _, a := range acks {
		buf = appendAck(buf, a)
	}
	return msgBeatAcks{Acks: buf, Unserved: unserved}
}

// unpackBeats and unpackAcks read whole messages back; malformed is true
// when a record did not parse (the ones before it are returned).
func unpackBeats(m msgBeats) (beats []beatEntry, malformed bool) {
	r := wireReader{buf: m.Beats}
	for b, ok := r.beat(); ok; b, ok = r.beat() {
		beats = append(beats, beatEntry{ClusterID: string(b.cluster), Term: b.term, LeaderID: b.leaderID, Round: b.round})
	}
	return beats, r.malformed
}

func unpackAcks(m msgBeatAcks) (acks []beatAck, malformed bool) {
	r := wireReader{buf: m.Acks}
	for a, ok := r.ack(); ok; a, ok = r.ack() {
		acks = append(acks, beatAck{ClusterID: string(a.cluster), Term: a.term, Round: a.round, FollowerID: a.followerID})
	}
	return acks, r.malformed
}
