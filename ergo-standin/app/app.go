// Package app provides Application, the base of application behaviors.
package app // import "ergo.services/ergo/app"

import "ergo.services/ergo/gen"

// Application is embedded by application behaviors, which supply
// Load(args ...any) (gen.ApplicationSpec, error).
type Application struct {
	gen.Application
}

// PreLoad binds the runtime view and calls Load of the embedding behavior.
func (a *Application) PreLoad(app gen.Application, args ...any) (gen.ApplicationSpec, error) {
	a.Application = app
	return app.Behavior().Load(args...)
}

// Init is called before the group is spawned; the default does nothing.
func (a *Application) Init(ref gen.Ref, mode gen.ApplicationMode) error { return nil }

// Start is called once the group is running; the default does nothing.
func (a *Application) Start(ref gen.Ref, mode gen.ApplicationMode) {}

// Stop is called when stopping begins; the default does nothing.
func (a *Application) Stop(ref gen.Ref, reason error) {}

// Terminate is called once the application has stopped.
func (a *Application) Terminate(reason error) {}
