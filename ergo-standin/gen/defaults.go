package gen

// DefaultRequestTimeout is the timeout of Call in seconds.
var DefaultRequestTimeout = 5

// DefaultPort is the first port an acceptor tries.
var DefaultPort uint16 = 11144

// DefaultCompressionThreshold is the size from which messages are compressed.
var DefaultCompressionThreshold int = 1024

// DefaultNetworkFlags are used when NetworkOptions.Flags.Enable is false.
var DefaultNetworkFlags = NetworkFlags{
	Enable:                       true,
	EnableRemoteSpawn:            true,
	EnableRemoteApplicationStart: true,
	EnableProxyAccept:            true,
	EnableImportantDelivery:      true,
	EnableSimultaneousConnect:    true,
}
