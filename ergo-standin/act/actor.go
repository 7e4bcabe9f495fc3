// Package act provides the Actor behavior: a process that handles messages,
// calls, exits and inspections through callbacks.
package act // import "ergo.services/ergo/act"

import (
	"fmt"

	"ergo.services/ergo/gen"
)

// ActorBehavior is implemented by types embedding Actor.
type ActorBehavior interface {
	gen.ProcessBehavior

	Init(args ...any) error
	HandleMessage(from gen.PID, message any) error
	HandleCall(from gen.PID, ref gen.Ref, request any) (any, error)
	Terminate(reason error)

	HandleMessageName(name gen.Atom, from gen.PID, message any) error
	HandleMessageAlias(alias gen.Alias, from gen.PID, message any) error
	HandleCallName(name gen.Atom, from gen.PID, ref gen.Ref, request any) (any, error)
	HandleCallAlias(alias gen.Alias, from gen.PID, ref gen.Ref, request any) (any, error)

	HandleLog(message gen.MessageLog) error
	HandleEvent(message gen.MessageEvent) error
	HandleInspect(from gen.PID, item ...string) map[string]string
	HandleSpan(message gen.TracingSpan) error
}

// Actor is the base of actor processes; embed it and implement Init.
type Actor struct {
	gen.Process

	behavior ActorBehavior
	mailbox  gen.ProcessMailbox
	trap     bool
	split    bool
}

// SetTrapExit turns exit signals (except from the parent) into messages.
func (a *Actor) SetTrapExit(trap bool) { a.trap = trap }

// TrapExit reports whether exit signals are trapped.
func (a *Actor) TrapExit() bool { return a.trap }

// SetSplitHandle routes messages sent by name or alias to the *Name and
// *Alias callbacks.
func (a *Actor) SetSplitHandle(split bool) { a.split = split }

// SplitHandle reports whether split handling is on.
func (a *Actor) SplitHandle() bool { return a.split }

// ProcessKind returns gen.ProcessKindActor.
func (a *Actor) ProcessKind() gen.ProcessKind { return gen.ProcessKindActor }

// ProcessInit binds the process and calls Init.
func (a *Actor) ProcessInit(process gen.Process, args ...any) error {
	behavior, ok := process.Behavior().(ActorBehavior)
	if !ok {
		return fmt.Errorf("ProcessInit: %s is not an act.ActorBehavior", process.BehaviorName())
	}
	a.Process = process
	a.behavior = behavior
	a.mailbox = process.Mailbox()
	return behavior.Init(args...)
}

// ProcessRun handles queued messages until the mailbox is empty.
func (a *Actor) ProcessRun() error {
	for {
		if a.State() != gen.ProcessStateRunning {
			return gen.TerminateReasonKill
		}
		var message *gen.MailboxMessage
		if v, ok := a.mailbox.Urgent.Pop(); ok {
			message = v.(*gen.MailboxMessage)
		} else if v, ok := a.mailbox.System.Pop(); ok {
			message = v.(*gen.MailboxMessage)
		} else if v, ok := a.mailbox.Main.Pop(); ok {
			message = v.(*gen.MailboxMessage)
		} else if v, ok := a.mailbox.Log.Pop(); ok {
			if err := a.behavior.HandleLog(v.(gen.MessageLog)); err != nil {
				return err
			}
			continue
		} else {
			return nil
		}
		err := a.handle(message)
		gen.ReleaseMailboxMessage(message)
		if err != nil {
			return err
		}
	}
}

func (a *Actor) handle(message *gen.MailboxMessage) error {
	switch message.Type {
	case gen.MailboxMessageTypeRegular:
		return a.handleMessage(message)

	case gen.MailboxMessageTypeRequest:
		return a.handleCall(message)

	case gen.MailboxMessageTypeEvent:
		if ev, ok := message.Message.(gen.MessageEvent); ok {
			return a.behavior.HandleEvent(ev)
		}

	case gen.MailboxMessageTypeSpan:
		if span, ok := message.Message.(gen.TracingSpan); ok {
			return a.behavior.HandleSpan(span)
		}

	case gen.MailboxMessageTypeExit:
		return a.handleExit(message)

	case gen.MailboxMessageTypeInspect:
		items, _ := message.Message.([]string)
		result := a.behavior.HandleInspect(message.From, items...)
		a.SendResponse(message.From, message.Ref, result)

	default:
		a.Log().Error("unknown mailbox message type %d", message.Type)
	}
	return nil
}

func (a *Actor) handleMessage(message *gen.MailboxMessage) error {
	if a.split {
		switch target := message.Target.(type) {
		case gen.Atom:
			return a.behavior.HandleMessageName(target, message.From, message.Message)
		case gen.Alias:
			return a.behavior.HandleMessageAlias(target, message.From, message.Message)
		}
	}
	return a.behavior.HandleMessage(message.From, message.Message)
}

func (a *Actor) handleCall(message *gen.MailboxMessage) error {
	var result any
	var reason error
	switch target := message.Target.(type) {
	case gen.Atom:
		if a.split {
			result, reason = a.behavior.HandleCallName(target, message.From, message.Ref, message.Message)
			break
		}
		result, reason = a.behavior.HandleCall(message.From, message.Ref, message.Message)
	case gen.Alias:
		if a.split {
			result, reason = a.behavior.HandleCallAlias(target, message.From, message.Ref, message.Message)
			break
		}
		result, reason = a.behavior.HandleCall(message.From, message.Ref, message.Message)
	default:
		result, reason = a.behavior.HandleCall(message.From, message.Ref, message.Message)
	}
	if reason != nil {
		if reason == gen.TerminateReasonNormal && result != nil {
			a.SendResponse(message.From, message.Ref, result)
		}
		return reason
	}
	if result != nil {
		a.SendResponse(message.From, message.Ref, result)
	}
	return nil
}

// trappable reports whether an exit signal may be turned into a message:
// never for signals from the parent or for node shutdown.
func (a *Actor) trappable(message *gen.MailboxMessage, reason error) bool {
	if !a.trap || message.From == a.Parent() {
		return false
	}
	if message.From == a.Node().PID() && reason == gen.TerminateReasonShutdown {
		return false
	}
	return reason != gen.TerminateReasonKill
}

func (a *Actor) handleExit(message *gen.MailboxMessage) error {
	switch exit := message.Message.(type) {
	case gen.MessageExitPID:
		if a.trappable(message, exit.Reason) {
			return a.behavior.HandleMessage(message.From, exit)
		}
		return fmt.Errorf("%s: %w", exit.PID, exit.Reason)
	case gen.MessageExitProcessID:
		if a.trappable(message, exit.Reason) {
			return a.behavior.HandleMessage(message.From, exit)
		}
		return fmt.Errorf("%s: %w", exit.ProcessID, exit.Reason)
	case gen.MessageExitAlias:
		if a.trappable(message, exit.Reason) {
			return a.behavior.HandleMessage(message.From, exit)
		}
		return fmt.Errorf("%s: %w", exit.Alias, exit.Reason)
	case gen.MessageExitEvent:
		if a.trappable(message, exit.Reason) {
			return a.behavior.HandleMessage(message.From, exit)
		}
		return fmt.Errorf("%s: %w", exit.Event, exit.Reason)
	case gen.MessageExitNode:
		if a.trappable(message, gen.ErrNoConnection) {
			return a.behavior.HandleMessage(message.From, exit)
		}
		return fmt.Errorf("%s: %w", exit.Name, gen.ErrNoConnection)
	case error:
		if a.trappable(message, exit) {
			return a.behavior.HandleMessage(message.From, gen.MessageExitPID{PID: message.From, Reason: exit})
		}
		return exit
	}
	a.Log().Error("unknown exit message %#v", message.Message)
	return nil
}

// ProcessTerminate calls Terminate.
func (a *Actor) ProcessTerminate(reason error) {
	if a.behavior != nil {
		a.behavior.Terminate(reason)
	}
}

// HandleMessage default: logs a warning.
func (a *Actor) HandleMessage(from gen.PID, message any) error {
	a.Log().Warning("HandleMessage: unhandled message from %s: %#v", from, message)
	return nil
}

// HandleCall default: logs a warning and does not reply.
func (a *Actor) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	a.Log().Warning("HandleCall: unhandled request from %s: %#v", from, request)
	return nil, nil
}

// HandleMessageName default: logs a warning.
func (a *Actor) HandleMessageName(name gen.Atom, from gen.PID, message any) error {
	a.Log().Warning("HandleMessageName: unhandled message from %s to %s", from, name)
	return nil
}

// HandleMessageAlias default: logs a warning.
func (a *Actor) HandleMessageAlias(alias gen.Alias, from gen.PID, message any) error {
	a.Log().Warning("HandleMessageAlias: unhandled message from %s to %s", from, alias)
	return nil
}

// HandleCallName default: logs a warning and does not reply.
func (a *Actor) HandleCallName(name gen.Atom, from gen.PID, ref gen.Ref, request any) (any, error) {
	a.Log().Warning("HandleCallName: unhandled request from %s to %s", from, name)
	return nil, nil
}

// HandleCallAlias default: logs a warning and does not reply.
func (a *Actor) HandleCallAlias(alias gen.Alias, from gen.PID, ref gen.Ref, request any) (any, error) {
	a.Log().Warning("HandleCallAlias: unhandled request from %s to %s", from, alias)
	return nil, nil
}

// HandleLog default: logs a warning.
func (a *Actor) HandleLog(message gen.MessageLog) error {
	a.Log().Warning("HandleLog: unhandled log message")
	return nil
}

// HandleEvent default: logs a warning.
func (a *Actor) HandleEvent(message gen.MessageEvent) error {
	a.Log().Warning("HandleEvent: unhandled event %s", message.Event)
	return nil
}

// HandleSpan default: logs a warning.
func (a *Actor) HandleSpan(message gen.TracingSpan) error {
	a.Log().Warning("HandleSpan: unhandled span")
	return nil
}

// HandleInspect default: returns nothing.
func (a *Actor) HandleInspect(from gen.PID, item ...string) map[string]string {
	return map[string]string{}
}

// Terminate default: does nothing.
func (a *Actor) Terminate(reason error) {}
