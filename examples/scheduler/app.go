package main

import (
	"ergo.services/actor/leader"
	"ergo.services/ergo/app"
	"ergo.services/ergo/gen"
)

// schedulerApp hosts the coordinator. Its spec registers the wire types:
// ApplicationSpec.Network is applied while the application loads, before
// its members are spawned, so no peer can ever talk to a coordinator whose
// node cannot decode the election.
type schedulerApp struct {
	app.Application

	spec coordinatorSpec
}

// Load returns the application spec.
func (a *schedulerApp) Load(args ...any) (gen.ApplicationSpec, error) {
	return gen.ApplicationSpec{
		Name:        "scheduler",
		Description: "runs a periodic job on the elected leader",
		Network: gen.ApplicationNetwork{
			// the election's types, and the coordinator's own requests,
			// which followers forward to the leader
			RegisterTypes:  append(leader.NetworkTypes(), Submit{}, Accepted{}),
			RegisterErrors: leader.ErrorTypes(),
		},
		Group: []gen.ApplicationMemberSpec{
			{Name: coordinatorName, Factory: factoryCoordinator, Args: []any{a.spec}},
		},
	}, nil
}
