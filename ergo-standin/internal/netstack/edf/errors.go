package edf

import "ergo.services/ergo/gen"

type namedError struct {
	name string
	err  error
}

// builtinErrors are pre-registered in every registry. They get wire names of
// their own because some gen errors share a message (ErrAliasOwner and
// ErrEventOwner are both "not an owner") and identity must survive the trip.
var builtinErrors = []namedError{
	{"gen.ErrNameUnknown", gen.ErrNameUnknown},
	{"gen.ErrParentUnknown", gen.ErrParentUnknown},
	{"gen.ErrNodeTerminated", gen.ErrNodeTerminated},
	{"gen.ErrProcessMailboxFull", gen.ErrProcessMailboxFull},
	{"gen.ErrProcessUnknown", gen.ErrProcessUnknown},
	{"gen.ErrProcessIncarnation", gen.ErrProcessIncarnation},
	{"gen.ErrProcessTerminated", gen.ErrProcessTerminated},
	{"gen.ErrMetaUnknown", gen.ErrMetaUnknown},
	{"gen.ErrMetaMailboxFull", gen.ErrMetaMailboxFull},
	{"gen.ErrApplicationUnknown", gen.ErrApplicationUnknown},
	{"gen.ErrApplicationDepends", gen.ErrApplicationDepends},
	{"gen.ErrApplicationState", gen.ErrApplicationState},
	{"gen.ErrApplicationLoadPanic", gen.ErrApplicationLoadPanic},
	{"gen.ErrApplicationEmpty", gen.ErrApplicationEmpty},
	{"gen.ErrApplicationName", gen.ErrApplicationName},
	{"gen.ErrApplicationStopping", gen.ErrApplicationStopping},
	{"gen.ErrApplicationRunning", gen.ErrApplicationRunning},
	{"gen.ErrTargetUnknown", gen.ErrTargetUnknown},
	{"gen.ErrTargetExist", gen.ErrTargetExist},
	{"gen.ErrTargetManagerOverload", gen.ErrTargetManagerOverload},
	{"gen.ErrRegistrarTerminated", gen.ErrRegistrarTerminated},
	{"gen.ErrAliasUnknown", gen.ErrAliasUnknown},
	{"gen.ErrAliasOwner", gen.ErrAliasOwner},
	{"gen.ErrEventUnknown", gen.ErrEventUnknown},
	{"gen.ErrEventOwner", gen.ErrEventOwner},
	{"gen.ErrTaken", gen.ErrTaken},
	{"gen.ErrAtomTooLong", gen.ErrAtomTooLong},
	{"gen.ErrTimeout", gen.ErrTimeout},
	{"gen.ErrUnsupported", gen.ErrUnsupported},
	{"gen.ErrUnknown", gen.ErrUnknown},
	{"gen.ErrNotAllowed", gen.ErrNotAllowed},
	{"gen.ErrDiscarded", gen.ErrDiscarded},
	{"gen.ErrDisabled", gen.ErrDisabled},
	{"gen.ErrBusy", gen.ErrBusy},
	{"gen.ErrExceeded", gen.ErrExceeded},
	{"gen.ErrIncorrect", gen.ErrIncorrect},
	{"gen.ErrMalformed", gen.ErrMalformed},
	{"gen.ErrResponseIgnored", gen.ErrResponseIgnored},
	{"gen.ErrUnregistered", gen.ErrUnregistered},
	{"gen.ErrTooLarge", gen.ErrTooLarge},
	{"gen.ErrNetworkStopped", gen.ErrNetworkStopped},
	{"gen.ErrNoConnection", gen.ErrNoConnection},
	{"gen.ErrNoRoute", gen.ErrNoRoute},
	{"gen.ErrInternal", gen.ErrInternal},
	{"gen.TerminateReasonNormal", gen.TerminateReasonNormal},
	{"gen.TerminateReasonKill", gen.TerminateReasonKill},
	{"gen.TerminateReasonPanic", gen.TerminateReasonPanic},
	{"gen.TerminateReasonShutdown", gen.TerminateReasonShutdown},
}
