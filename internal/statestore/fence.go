package statestore

import "errors"

// HeldBy reports whether lock l, as read now, is still the acquisition runID made (its
// token): nothing else ran under it since.
func (l *Lock) HeldBy(runID, token string) bool {
	return l != nil && l.RunID == runID && l.Token == token
}

// Fenced decides what a step does when its lock check failed with cause, and the lock read
// again is current (nil when it could not be read). While the lock still holds the run's
// acquisition, another invocation of the same run resumed it since (a stack event and a
// heartbeat at once, or a restart): that one carries on and this step just ends (false).
// Otherwise the lock was taken over, removed or expired: the run was fenced and is
// abandoned (true).
func Fenced(cause error, current *Lock, runID, token string) bool {
	return !errors.Is(cause, ErrLockLost) || !current.HeldBy(runID, token)
}
