package node

import (
	"time"

	"ergo.services/ergo/gen"
)

// The methods below are the part of gen.Process the stand-in does not
// implement fully: meta processes, remote spawn and tracing.

func (p *process) SpawnMeta(behavior gen.MetaBehavior, options gen.MetaOptions) (gen.Alias, error) {
	return gen.Alias{}, gen.ErrUnsupported
}

func (p *process) RemoteSpawn(node gen.Atom, name gen.Atom, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return gen.PID{}, gen.ErrUnsupported
}

func (p *process) RemoteSpawnRegister(node gen.Atom, name gen.Atom, register gen.Atom, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return gen.PID{}, gen.ErrUnsupported
}

func (p *process) Compression() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.compression.Enable
}

func (p *process) SetCompression(enabled bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.compression.Enable = enabled
	return nil
}

func (p *process) CompressionType() gen.CompressionType {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.compression.Type
}

func (p *process) SetCompressionType(ctype gen.CompressionType) error {
	switch ctype {
	case gen.CompressionTypeGZIP, gen.CompressionTypeLZW, gen.CompressionTypeZLIB:
	default:
		return gen.ErrIncorrect
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.compression.Type = ctype
	return nil
}

func (p *process) CompressionLevel() gen.CompressionLevel {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.compression.Level
}

func (p *process) SetCompressionLevel(level gen.CompressionLevel) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.compression.Level = level
	return nil
}

func (p *process) CompressionThreshold() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.compression.Threshold
}

func (p *process) SetCompressionThreshold(threshold int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.compression.Threshold = threshold
	return nil
}

func (p *process) SetKeepNetworkOrder(order bool) error {
	p.keepOrder.Store(order)
	return nil
}

func (p *process) KeepNetworkOrder() bool { return p.keepOrder.Load() }

func (p *process) SetImportantDelivery(important bool) error {
	p.important.Store(important)
	return nil
}

func (p *process) ImportantDelivery() bool { return p.important.Load() }

func (p *process) SendExitMeta(meta gen.Alias, reason error) error { return gen.ErrUnsupported }

func (p *process) SendExitMetaAfter(meta gen.Alias, reason error, after time.Duration) (gen.CancelFunc, error) {
	return nil, gen.ErrUnsupported
}

func (p *process) InspectMeta(meta gen.Alias, item ...string) (map[string]string, error) {
	return nil, gen.ErrUnsupported
}

func (p *process) MetaInfo(meta gen.Alias) (gen.MetaInfo, error) {
	return gen.MetaInfo{}, gen.ErrUnsupported
}

func (p *process) PropagatingTrace() gen.Tracing {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.propagating
}

func (p *process) SetPropagatingTrace(t gen.Tracing) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.propagating = t
}

func (p *process) TracingAttributes() []gen.TracingAttribute {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]gen.TracingAttribute(nil), p.tracingAttr...)
}

func (p *process) SendTracingSpan(span gen.TracingSpan) {}
func (p *process) CloseTracingSpans()                   {}
func (p *process) ClearTracingSpanAttributes()          {}

func (p *process) SetTracingSampler(sampler gen.TracingSampler) error {
	if sampler == nil {
		return gen.ErrIncorrect
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sampler = sampler
	return nil
}

func (p *process) TracingSampler() gen.TracingSampler {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.sampler
}

func (p *process) SetTracingAttribute(key, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.tracingAttr {
		if p.tracingAttr[i].Key == key {
			p.tracingAttr[i].Value = value
			return
		}
	}
	p.tracingAttr = append(p.tracingAttr, gen.TracingAttribute{Key: key, Value: value})
}

func (p *process) RemoveTracingAttribute(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.tracingAttr {
		if p.tracingAttr[i].Key == key {
			p.tracingAttr = append(p.tracingAttr[:i:i], p.tracingAttr[i+1:]...)
			return
		}
	}
}

func (p *process) SetTracingSpanAttribute(key, value string) {}

func (p *process) StartTracingSpan(name string) gen.TracingSpanScope {
	return gen.TracingSpanScopeNoop
}
