// Package ergo starts nodes of the stand-in framework.
package ergo // import "ergo.services/ergo"

import (
	"runtime/debug"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/node"
)

// FrameworkVersion is the version of the framework this stand-in mirrors.
var FrameworkVersion = gen.Version{
	Name:    "Ergo Framework",
	Release: "3.3.0",
	License: gen.LicenseMIT,
}

// StartNode starts a node. options.Version is filled from the build info of
// the main module when empty. As in v3.3.0, the node handles SIGTERM and
// os.Interrupt: either one stops it gracefully (Stop); call
// SetCTRLC(false) on the node to keep the signals for the program.
func StartNode(name gen.Atom, options gen.NodeOptions) (gen.Node, error) {
	if options.Version.Name == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			options.Version = gen.Version{Name: info.Main.Path, Release: info.Main.Version}
		}
	}
	return node.Start(name, options, FrameworkVersion)
}
