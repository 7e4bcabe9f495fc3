package node

import (
	"strings"
	"sync"

	"ergo.services/ergo/gen"
)

// envStore is the environment of a node or a process. Names are
// case-insensitive, as in the framework (stored upper-case); it is safe
// from any goroutine, because other processes read a process's
// environment when they spawn children.
type envStore struct {
	mu sync.RWMutex
	m  map[gen.Env]any
}

func envKey(e gen.Env) gen.Env { return gen.Env(strings.ToUpper(string(e))) }

// merge copies every entry of from over the store's own.
func (s *envStore) merge(from map[gen.Env]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[gen.Env]any, len(from))
	}
	for k, v := range from {
		s.m[envKey(k)] = v
	}
}

func (s *envStore) EnvList() map[gen.Env]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := make(map[gen.Env]any, len(s.m))
	for k, v := range s.m {
		m[k] = v
	}
	return m
}

func (s *envStore) SetEnv(name gen.Env, value any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if value == nil {
		delete(s.m, envKey(name))
		return
	}
	if s.m == nil {
		s.m = make(map[gen.Env]any)
	}
	s.m[envKey(name)] = value
}

func (s *envStore) Env(name gen.Env) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.m[envKey(name)]
	return v, ok
}

func (s *envStore) EnvDefault(name gen.Env, def any) any {
	if v, ok := s.Env(name); ok {
		return v
	}
	return def
}
