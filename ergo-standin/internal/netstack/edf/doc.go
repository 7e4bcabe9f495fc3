// Package edf is the stand-in's small EDF-like binary codec.
//
// A value in an `any` position is written as a type descriptor followed by
// the value body, so the receiver rebuilds the exact Go type (an []int stays
// an []int). Named types travel by their canonical name
// "#"+PkgPath+"/"+Name and must be registered on both sides; unlike the real
// framework there is no per-connection type cache exchanged in the handshake,
// the name is written every time (simpler, slightly larger frames).
//
// Registration is per Registry; the network layer keeps one per OS process,
// so a type or error registered by any node of a process is known to every
// node of it (as in the framework). Types are looked up when a value is
// encoded or decoded, so a type registered after a connection formed works
// on it (the framework sends such a type by name instead of by its
// connection cache ID). Registered errors travel by identity only when they
// were registered before the connection formed (see Errors). The gen
// identifiers
// (Atom, PID, ProcessID, Ref, Alias, Event), time.Time and time.Duration are
// built in. Errors travel by identity when registered (every gen.Err* and
// gen.TerminateReason* is pre-registered, so errors.Is works on the
// receiver), as a wrapper keeping registered wrapped errors, or as a plain
// string decoded with errors.New.
package edf // import "ergo.services/ergo/internal/netstack/edf"
