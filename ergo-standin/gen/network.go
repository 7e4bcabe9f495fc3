package gen

import (
	"net"
	"reflect"
	"time"
)

// Network is the network stack of a node.
type Network interface {
	Registrar() (Registrar, error)
	ResolveApplication(name Atom) (ApplicationRoutes, error)
	Cookie() string
	SetCookie(cookie string) error
	MaxMessageSize() int
	SetMaxMessageSize(size int)
	NetworkFlags() NetworkFlags
	SetNetworkFlags(flags NetworkFlags)
	Acceptors() ([]Acceptor, error)
	Node(name Atom) (RemoteNode, error)
	GetNode(name Atom) (RemoteNode, error)
	GetNodeWithRoute(name Atom, route NetworkRoute) (RemoteNode, error)
	Nodes() []Atom
	AddRoute(match string, route NetworkRoute, weight int) error
	RemoveRoute(match string) error
	Route(name Atom) ([]NetworkRoute, error)
	AddProxyRoute(match string, proxy NetworkProxyRoute, weight int) error
	RemoveProxyRoute(match string) error
	ProxyRoute(name Atom) ([]NetworkProxyRoute, error)
	RegisterProto(proto NetworkProto)
	RegisterHandshake(handshake NetworkHandshake)
	EnableSpawn(name Atom, factory ProcessFactory, nodes ...Atom) error
	DisableSpawn(name Atom, nodes ...Atom) error
	EnableApplicationStart(name Atom, nodes ...Atom) error
	DisableApplicationStart(name Atom, nodes ...Atom) error
	Info() (NetworkInfo, error)
	Mode() NetworkMode
	Protos() []NetworkProto
	RegisterType(v any) error
	RegisterTypes(types []any) error
	RegisterError(e error) error
	RegisterErrors(errs []error) error
	RegisterAtom(a Atom) error
	RegisterAtoms(atoms []Atom) error
	RegisteredTypes() []RegisteredTypeInfo
	LookupType(name string) (reflect.Type, bool)
}

// RemoteNode is a connected peer.
type RemoteNode interface {
	Name() Atom
	Uptime() int64
	ConnectionUptime() int64
	Version() Version
	Info() RemoteNodeInfo
	Spawn(name Atom, options ProcessOptions, args ...any) (PID, error)
	SpawnRegister(register Atom, name Atom, options ProcessOptions, args ...any) (PID, error)
	ApplicationStart(name Atom, options ApplicationOptions) error
	ApplicationStartTemporary(name Atom, options ApplicationOptions) error
	ApplicationStartTransient(name Atom, options ApplicationOptions) error
	ApplicationStartPermanent(name Atom, options ApplicationOptions) error
	ApplicationInfo(name Atom) (ApplicationInfo, error)
	Creation() int64
	Disconnect()
}

// RemoteNodeInfo describes a connected peer (partial).
type RemoteNodeInfo struct {
	Node             Atom
	Uptime           int64
	ConnectionUptime int64
	Version          Version
	HandshakeVersion Version
	ProtoVersion     Version
	NetworkFlags     NetworkFlags
	PoolSize         int
	PoolLen          int
	PoolDSN          []string
	MaxMessageSize   int
	MessagesIn       uint64
	MessagesOut      uint64
	BytesIn          uint64
	BytesOut         uint64
}

// NetworkMode is the mode of the network stack.
type NetworkMode int

// Network modes.
const (
	NetworkModeEnabled  NetworkMode = 0
	NetworkModeHidden   NetworkMode = 1 // outgoing only: no acceptor, not registered
	NetworkModeDisabled NetworkMode = -1
)

// String returns the mode name.
func (nm NetworkMode) String() string {
	switch nm {
	case NetworkModeEnabled:
		return "enabled"
	case NetworkModeHidden:
		return "hidden"
	case NetworkModeDisabled:
		return "disabled"
	}
	return "unknown"
}

// NetworkOptions configure the network stack of a node.
type NetworkOptions struct {
	Mode                    NetworkMode
	Cookie                  string
	Flags                   NetworkFlags
	Registrar               Registrar
	Handshake               NetworkHandshake
	Proto                   NetworkProto
	SoftwareKeepAliveMisses int
	HandshakeTimeout        time.Duration
	HandshakeMaxMessageSize int
	Acceptors               []AcceptorOptions
	InsecureSkipVerify      bool
	MaxMessageSize          int
	ProxyAccept             ProxyAcceptOptions
	ProxyTransit            ProxyTransitOptions
	FragmentSize            int
	FragmentTimeout         int
	MaxFragmentAssemblies   int
}

// AcceptorOptions configure one acceptor.
type AcceptorOptions struct {
	Cookie                  string
	Host                    string
	Port                    uint16
	PortRange               uint16
	RouteHost               string
	RoutePort               uint16
	TCP                     string
	BufferSize              int
	MaxMessageSize          int
	Flags                   NetworkFlags
	AtomMapping             map[Atom]Atom
	CertManager             CertManager
	InsecureSkipVerify      bool
	Registrar               Registrar
	Handshake               NetworkHandshake
	Proto                   NetworkProto
	MaxHandshakes           int
	SoftwareKeepAliveMisses int
	HandshakeTimeout        time.Duration
	HandshakeMaxMessageSize int
}

// NetworkFlags are the features a node offers to its peers.
type NetworkFlags struct {
	Enable                       bool
	EnableRemoteSpawn            bool
	EnableRemoteApplicationStart bool
	EnableFragmentation          bool
	EnableProxyTransit           bool
	EnableProxyAccept            bool
	EnableImportantDelivery      bool
	EnableSimultaneousConnect    bool
	EnableClockSkew              bool
	EnableTracing                bool
	EnableSoftwareKeepAlive      int
	EnableWrappedErrors          bool
	EnableSchemaEvolution        bool
}

// NetworkRoute is a static route to a node.
type NetworkRoute struct {
	Resolver                Resolver
	Route                   Route
	Cookie                  string
	Cert                    CertManager
	InsecureSkipVerify      bool
	Flags                   NetworkFlags
	AtomMapping             map[Atom]Atom
	LogLevel                LogLevel
	SoftwareKeepAliveMisses int
	HandshakeTimeout        time.Duration
	HandshakeMaxMessageSize int
}

// Route is a network address of a node.
type Route struct {
	Host             string
	Port             uint16
	TLS              bool
	HandshakeVersion Version
	ProtoVersion     Version
}

// Resolver resolves node names into routes.
type Resolver interface {
	Resolve(node Atom) ([]Route, error)
	ResolveProxy(node Atom) ([]ProxyRoute, error)
	ResolveApplication(name Atom) (ApplicationRoutes, error)
}

// Registrar is the name service of the network. As in the framework, the
// node drives part of it: Register when its network starts (with a custom
// registrar, NetworkOptions.Registrar; the routes it returns are added as
// static routes) and Terminate when it stops. A registrar that does not
// support a feature returns gen.ErrUnsupported.
type Registrar interface {
	Register(node NodeRegistrar, routes RegisterRoutes) (StaticRoutes, error)
	Resolver() Resolver
	RegisterProxy(to Atom) error
	UnregisterProxy(to Atom) error
	RegisterApplicationRoute(route ApplicationRoute) error
	UnregisterApplicationRoute(name Atom) error
	Nodes() ([]Atom, error)
	Config(items ...string) (map[string]any, error)
	ConfigItem(item string) (any, error)
	Event() (Event, error)
	Info() RegistrarInfo
	Terminate()
	Version() Version
}

// NodeRegistrar is what a registrar may use of the node that registers
// with it (Registrar.Register).
type NodeRegistrar interface {
	Name() Atom
	Creation() int64
	SetEnv(name Env, value any)
	RegisterEvent(name Atom, options EventOptions) (Ref, error)
	UnregisterEvent(name Atom) error
	SendEvent(name Atom, token Ref, options MessageOptions, message any) error
	Log() Log
	Stop()
	StopForce()
}

// RegisterRoutes is what a node publishes when it registers: its
// acceptors' routes, and the application and proxy routes it serves.
type RegisterRoutes struct {
	Routes            []Route
	ApplicationRoutes []ApplicationRoute
	ProxyRoutes       []ProxyRoute
}

// StaticRoutes are the routes a registrar hands a node that registers, by
// node name pattern.
type StaticRoutes struct {
	Routes  map[string]NetworkRoute
	Proxies map[string]NetworkProxyRoute
}

// RegistrarInfo describes the registrar of a node.
type RegistrarInfo struct {
	Server                     string
	EmbeddedServer             bool
	Version                    Version
	SupportConfig              bool
	SupportEvent               bool
	SupportRegisterProxy       bool
	SupportRegisterApplication bool
}

// Acceptor is a listening socket of the network stack (minimal).
type Acceptor interface {
	Cookie() string
	SetCookie(cookie string)
	NetworkFlags() NetworkFlags
	SetNetworkFlags(flags NetworkFlags)
	MaxMessageSize() int
	SetMaxMessageSize(size int)
	Info() AcceptorInfo
}

// AcceptorInfo describes an acceptor.
type AcceptorInfo struct {
	Interface        string
	MaxMessageSize   int
	Flags            NetworkFlags
	TLS              bool
	CustomRegistrar  bool
	RegistrarServer  string
	RegistrarVersion Version
	HandshakeVersion Version
	ProtoVersion     Version
}

// NetworkInfo describes the network stack (partial).
type NetworkInfo struct {
	Mode             NetworkMode
	Registrar        RegistrarInfo
	Acceptors        []AcceptorInfo
	MaxMessageSize   int
	HandshakeVersion Version
	ProtoVersion     Version
	Flags            NetworkFlags
}

// ProxyRoute is a route to a node through a proxy node.
type ProxyRoute struct {
	To    Atom
	Proxy Atom
}

// NetworkProxyRoute is a static proxy route.
type NetworkProxyRoute struct {
	Resolver Resolver
	Route    ProxyRoute
	Cookie   string
	Flags    NetworkFlags
	MaxHop   int
	LogLevel LogLevel
}

// ProxyAcceptOptions configure accepting proxied connections.
type ProxyAcceptOptions struct {
	Cookie string
	Flags  NetworkFlags
}

// ProxyTransitOptions configure proxy transit.
type ProxyTransitOptions struct {
	Flags NetworkFlags
}

// NetworkProto is a network protocol implementation (minimal).
type NetworkProto interface {
	Version() Version
}

// NetworkHandshake is a handshake implementation (the framework's method
// set). The stand-in's implementation is ergo.services/ergo/net/handshake.
type NetworkHandshake interface {
	NetworkFlags() NetworkFlags
	// Start runs the dialing side of the handshake on a new TCP connection.
	Start(NodeHandshake, net.Conn, HandshakeOptions) (HandshakeResult, error)
	// Join adds a TCP link to the connection with the given ID (dialing side).
	Join(NodeHandshake, net.Conn, string, HandshakeOptions) ([]byte, error)
	// Accept runs the accepting side (a new connection or a Join).
	Accept(NodeHandshake, net.Conn, HandshakeOptions) (HandshakeResult, error)
	Version() Version
}

// NodeHandshake is what a handshake learns about the local node.
type NodeHandshake interface {
	Name() Atom
	Creation() int64
	Version() Version
}

// HandshakeOptions configure one handshake.
type HandshakeOptions struct {
	Cookie         string
	Flags          NetworkFlags
	CertManager    CertManager
	MaxMessageSize int
}

// HandshakeResult is what a handshake established. Custom carries
// implementation data for the protocol (net/handshake.ConnectionOptions).
type HandshakeResult struct {
	HandshakeVersion Version

	ConnectionID       string
	Peer               Atom
	PeerCreation       int64
	PeerVersion        Version
	PeerFlags          NetworkFlags
	PeerMaxMessageSize int

	NodeFlags          NetworkFlags
	NodeMaxMessageSize int

	AtomMapping map[Atom]Atom

	// Tail holds bytes read past the handshake; they belong to the protocol.
	Tail   []byte
	Custom any
}
