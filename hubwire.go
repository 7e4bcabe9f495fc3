package leader

import "encoding/binary"

// The hubs' wire format. A msgBeats or msgBeatAcks holds one record per
// election, a thousand or more of them, twice per heartbeat interval and
// node pair, so what a record costs is what the hubs cost:
//
//   - Records travel packed in one []byte, which the framework's codec
//     copies as it is. As slices of structs, the codec walked every field
//     of every record by reflection on both ends and the decoder allocated
//     a string per ClusterID: that was most of the hubs' CPU time.
//   - An election is named on the wire by its key, a number the sending
//     hub gave the leader's actor when it joined (routes.go), not by its
//     ClusterID. The ClusterID goes along with the key only until the
//     receiving hub has shown it knows the key (it answered a record of
//     it). So a hub finds a record's election by a number, and nobody
//     hashes and compares a ClusterID for every record of every interval.
//
// A record is a sequence of unsigned varints (encoding/binary); a ClusterID
// is its length followed by its bytes:
//
//	beat: key<<1 | 1 if a ClusterID follows, [ClusterID], Term, LeaderID, Round, Fresh (µs)
//	ack:  key, Term, Round, FollowerID
//	msgBeatAcks.Unserved and .Unknown: keys
//
// A peer can send anything: a record that does not parse (truncated, a
// varint that overflows, a ClusterID longer than maxWireClusterID, a key
// beyond maxWireKey) ends the reading of the message. The records before it
// were well formed and are used; the rest is dropped and counted
// (ergo:hub_malformed), never guessed at. Nothing a peer sends makes the
// reader panic or allocate more than the message's own size.

// maxWireClusterID bounds a ClusterID read off the wire. Options does not
// limit a ClusterID's length; one this long is no user's.
const maxWireClusterID = 1 << 16

// maxWireFresh bounds a round's F read off the wire, in microseconds: an
// hour. The follower's actor bounds it by its own promise (extendFresh).
const maxWireFresh = 3600 * 1000 * 1000

// maxWireKey bounds a key read off the wire: a hub numbers its elections
// from 1, one per actor that ever joined it.
const maxWireKey = 1 << 40

// wireBeat is one election's round in msgBeats, as written or as read
// (cluster then aliases the message, and is nil when the key alone came).
type wireBeat struct {
	key                   uint64
	cluster               []byte
	term, leaderID, round uint64
	fresh                 uint64 // the round's F in microseconds (election.roundFresh)
}

// wireAck is one follower's acknowledgement in msgBeatAcks.
type wireAck struct {
	key                     uint64
	term, round, followerID uint64
}

// appendBeat packs one election's round for msgBeats, with its ClusterID
// if named.
func appendBeat(buf []byte, key uint64, cluster string, named bool, term, leaderID, round, fresh uint64) []byte {
	if named {
		buf = binary.AppendUvarint(buf, key<<1|1)
		buf = binary.AppendUvarint(buf, uint64(len(cluster)))
		buf = append(buf, cluster...)
	} else {
		buf = binary.AppendUvarint(buf, key<<1)
	}
	buf = binary.AppendUvarint(buf, term)
	buf = binary.AppendUvarint(buf, leaderID)
	buf = binary.AppendUvarint(buf, round)
	return binary.AppendUvarint(buf, fresh)
}

// appendAck packs one follower's acknowledgement for msgBeatAcks.
func appendAck(buf []byte, a wireAck) []byte {
	buf = binary.AppendUvarint(buf, a.key)
	buf = binary.AppendUvarint(buf, a.term)
	buf = binary.AppendUvarint(buf, a.round)
	return binary.AppendUvarint(buf, a.followerID)
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

func (r *wireReader) key() uint64 { return r.checkKey(r.uvarint()) }

// checkKey fails the reading on a key no hub gives.
func (r *wireReader) checkKey(k uint64) uint64 {
	if k == 0 || k > maxWireKey {
		r.fail()
	}
	return k
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
	head := r.uvarint()
	b.key = r.checkKey(head >> 1)
	if head&1 == 1 {
		b.cluster = r.bytes()
	}
	b.term = r.uvarint()
	b.leaderID = r.uvarint()
	b.round = r.uvarint()
	b.fresh = r.uvarint()
	return b, r.malformed == false
}

// ack reads the next ack record; ok is false when there is none or it did
// not parse.
func (r *wireReader) ack() (a wireAck, ok bool) {
	if r.more() == false {
		return a, false
	}
	a.key = r.key()
	a.term = r.uvarint()
	a.round = r.uvarint()
	a.followerID = r.uvarint()
	return a, r.malformed == false
}

// nextKey reads the next key of a list of keys; ok is false when there is
// none or it did not parse.
func (r *wireReader) nextKey() (k uint64, ok bool) {
	if r.more() == false {
		return 0, false
	}
	k = r.key()
	return k, r.malformed == false
}

// appendKeys packs a list of keys.
func appendKeys(buf []byte, keys ...uint64) []byte {
	for _, k := range keys {
		buf = binary.AppendUvarint(buf, k)
	}
	return buf
}

// packBeats and packAcks build whole messages, and unpackBeats,
// unpackAcks and unpackKeys read them back (tests, and describe in the
// simulator); malformed is true when a record did not parse (the ones
// before it are returned).
func packBeats(beats ...wireBeat) msgBeats {
	var buf []byte
	for _, b := range beats {
		buf = appendBeat(buf, b.key, string(b.cluster), b.cluster != nil, b.term, b.leaderID, b.round, b.fresh)
	}
	return msgBeats{Beats: buf}
}

func packAcks(acks []wireAck, unserved, unknown []uint64) msgBeatAcks {
	var buf []byte
	for _, a := range acks {
		buf = appendAck(buf, a)
	}
	return msgBeatAcks{Acks: buf, Unserved: appendKeys(nil, unserved...), Unknown: appendKeys(nil, unknown...)}
}

func unpackBeats(m msgBeats) (beats []wireBeat, malformed bool) {
	r := wireReader{buf: m.Beats}
	for b, ok := r.beat(); ok; b, ok = r.beat() {
		if b.cluster != nil {
			b.cluster = append([]byte{}, b.cluster...)
		}
		beats = append(beats, b)
	}
	return beats, r.malformed
}

func unpackAcks(m msgBeatAcks) (acks []wireAck, malformed bool) {
	r := wireReader{buf: m.Acks}
	for a, ok := r.ack(); ok; a, ok = r.ack() {
		acks = append(acks, a)
	}
	return acks, r.malformed
}

func unpackKeys(buf []byte) (keys []uint64, malformed bool) {
	r := wireReader{buf: buf}
	for k, ok := r.nextKey(); ok; k, ok = r.nextKey() {
		keys = append(keys, k)
	}
	return keys, r.malformed
}
