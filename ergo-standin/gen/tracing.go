package gen

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Tracing is the trace context carried by a message; zero ID = no trace.
type Tracing struct {
	ID       [2]uint64
	SpanID   uint64
	Behavior string
}

// TracingFlags select what a tracing exporter receives.
type TracingFlags uint32

// Tracing flags.
const (
	TracingFlagSend TracingFlags = 1 << iota
	TracingFlagReceive
	TracingFlagProcs
	TracingFlagInherit
)

// TracingPoint is where a span was observed.
type TracingPoint int

// Tracing points.
const (
	TracingPointSent      TracingPoint = 1
	TracingPointDelivered TracingPoint = 2
	TracingPointProcessed TracingPoint = 3
	TracingPointSpan      TracingPoint = 4
)

// TracingKind is the kind of a span; 0 is a business span.
type TracingKind int

// Tracing kinds.
const (
	TracingKindSend      TracingKind = 1
	TracingKindRequest   TracingKind = 2
	TracingKindResponse  TracingKind = 3
	TracingKindSpawn     TracingKind = 4
	TracingKindTerminate TracingKind = 5
)

// TracingSpan is one observation exported to tracing exporters.
type TracingSpan struct {
	TraceID      [2]uint64
	SpanID       uint64
	ParentSpanID uint64
	ParentPoint  TracingPoint
	Point        TracingPoint
	Kind         TracingKind
	Timestamp    int64
	EndTimestamp int64
	Node         Atom
	From         PID
	To           any // PID | ProcessID | Alias
	Ref          Ref
	Behavior     string
	Message      string
	Error        string
	Attributes   []TracingAttribute
}

// TracingAttribute is a key/value attached to spans.
type TracingAttribute struct {
	Key   string
	Value string
}

// TracingSpanScope is an open business span.
type TracingSpanScope interface {
	SetAttribute(key, value string)
	End()
	EndError(err error)
}

type tracingSpanScopeNoop struct{}

func (tracingSpanScopeNoop) SetAttribute(key, value string) {}
func (tracingSpanScopeNoop) End()                           {}
func (tracingSpanScopeNoop) EndError(err error)             {}

// TracingSpanScopeNoop is a scope that records nothing.
var TracingSpanScopeNoop TracingSpanScope = tracingSpanScopeNoop{}

// TracingBehavior is a tracing exporter object.
type TracingBehavior interface {
	HandleSpan(TracingSpan)
	Terminate()
}

// TracingExporter is a named exporter with its flags.
type TracingExporter struct {
	Name     string
	Exporter TracingBehavior
	Flags    TracingFlags
}

// TracingOptions configure tracing of a node.
type TracingOptions struct {
	Exporters []TracingExporter
}

// TracingSampler decides whether a new trace is recorded.
type TracingSampler interface {
	Sample() bool
	String() string
}

type samplerConst bool

func (s samplerConst) Sample() bool { return bool(s) }
func (s samplerConst) String() string {
	if s {
		return "always"
	}
	return "disable"
}

// Samplers that always or never sample.
var (
	TracingSamplerAlways  TracingSampler = samplerConst(true)
	TracingSamplerDisable TracingSampler = samplerConst(false)
)

type samplerRatio float64

func (s samplerRatio) Sample() bool   { return rand.Float64() < float64(s) }
func (s samplerRatio) String() string { return fmt.Sprintf("ratio(%g)", float64(s)) }

// TracingSamplerRatio samples the given fraction of traces.
func TracingSamplerRatio(rate float64) TracingSampler { return samplerRatio(rate) }

type samplerRateLimit struct {
	mu     sync.Mutex
	limit  int
	second int64
	count  int
}

func (s *samplerRateLimit) Sample() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().Unix()
	if now != s.second {
		s.second, s.count = now, 0
	}
	if s.count >= s.limit {
		return false
	}
	s.count++
	return true
}

func (s *samplerRateLimit) String() string { return fmt.Sprintf("ratelimit(%d/s)", s.limit) }

// TracingSamplerRateLimit samples at most perSecond traces a second.
func TracingSamplerRateLimit(perSecond int) TracingSampler {
	return &samplerRateLimit{limit: perSecond}
}
