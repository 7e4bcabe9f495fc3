package gen

import (
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"time"
)

// Atom is a name: of a node ("name@host"), a process, an application.
type Atom string

var (
	atomCRCTable = crc32.MakeTable(0xD5828281)
	atomCRCCache sync.Map // Atom -> uint32
)

// String returns the atom in single quotes.
func (a Atom) String() string { return "'" + string(a) + "'" }

// Host returns the part after '@', or "" when there is none.
func (a Atom) Host() string {
	if i := strings.IndexByte(string(a), '@'); i >= 0 {
		return string(a[i+1:])
	}
	return ""
}

// CRC32Sum returns the (cached) CRC32 checksum of the atom.
func (a Atom) CRC32Sum() uint32 {
	if v, ok := atomCRCCache.Load(a); ok {
		return v.(uint32)
	}
	sum := crc32.Checksum([]byte(a), atomCRCTable)
	atomCRCCache.Store(a, sum)
	return sum
}

// CRC32 returns the checksum of the atom as 8 upper-case hex digits.
func (a Atom) CRC32() string { return fmt.Sprintf("%08X", a.CRC32Sum()) }

// PID identifies a process.
type PID struct {
	Node     Atom
	ID       uint64
	Creation int64
}

// String renders the PID as <CRC.high.low>.
func (p PID) String() string {
	return fmt.Sprintf("<%s.%d.%d>", p.Node.CRC32(), int32(p.ID>>32), int32(p.ID))
}

// ProcessID identifies a process by its registered name on a node.
type ProcessID struct {
	Name Atom
	Node Atom
}

// String renders the ProcessID as <CRC.name>.
func (p ProcessID) String() string {
	return "<" + p.Node.CRC32() + "." + string(p.Name) + ">"
}

// Ref is a unique reference made by a node.
type Ref struct {
	Node     Atom
	Creation int64
	ID       [3]uint64
}

// String renders the reference as Ref#<CRC.id0.id1.id2>.
func (r Ref) String() string {
	return fmt.Sprintf("Ref#<%s.%d.%d.%d>", r.Node.CRC32(), r.ID[0], r.ID[1], r.ID[2])
}

// Deadline returns the unix-seconds deadline stored in ID[2]; 0 means none.
func (r Ref) Deadline() uint64 { return r.ID[2] }

// IsAlive reports false once the deadline of the reference has passed.
func (r Ref) IsAlive() bool {
	d := r.Deadline()
	return d == 0 || uint64(time.Now().Unix()) < d
}

// Alias is an additional identifier of a process or a meta process.
type Alias Ref

// String renders the alias as Alias#<CRC.id0.id1.id2>.
func (a Alias) String() string {
	return fmt.Sprintf("Alias#<%s.%d.%d.%d>", a.Node.CRC32(), a.ID[0], a.ID[1], a.ID[2])
}

// Event identifies a registered event.
type Event struct {
	Name Atom
	Node Atom
}

// String renders the event as Event#<CRC:name>.
func (e Event) String() string {
	return "Event#<" + e.Node.CRC32() + ":" + string(e.Name) + ">"
}

// CoreEvent is the event every node registers at start, produced by its
// core PID; the name cannot be registered again.
const CoreEvent Atom = "core"

// EventOptions configure a registered event.
type EventOptions struct {
	// Notify makes the producer get MessageEventStart when the event gets
	// its first subscriber and MessageEventStop when it loses the last.
	Notify bool
	// Buffer keeps the last Buffer messages; a new subscriber gets them.
	Buffer int
	// Open is accepted and ignored: as on the framework's v320 branch,
	// every sender needs the token.
	Open bool
}

// Env is the name of an environment variable; names are case-insensitive.
type Env string

// String returns the upper-cased name.
func (e Env) String() string { return strings.ToUpper(string(e)) }

// Version describes a piece of software.
type Version struct {
	Name    string
	Release string
	Commit  string
	License string
}

// String returns "Name:Release".
func (v Version) String() string {
	if v.Commit != "" {
		return v.Name + ":" + v.Release + "[" + v.Commit + "]"
	}
	return v.Name + ":" + v.Release
}

// LicenseMIT is the license string of the framework.
const LicenseMIT string = "MIT"

// RegisteredTypeInfo describes a type registered in the network codec.
type RegisteredTypeInfo struct {
	ID           uint64
	Name         string
	Kind         string
	Schema       string
	Proto        string
	MinSize      uint32
	SizeVariable bool
}
