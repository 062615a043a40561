package supervisor

import "time"

// Restart delays: the first restart waits minRestartDelay, each next one
// twice as long up to maxRestartDelay, and a child that ran for
// healthyRun starts the sequence over.
const (
	minRestartDelay = time.Second
	maxRestartDelay = 30 * time.Second
	healthyRun      = 60 * time.Second
)

// backoff computes the wait before restarting a child.
type backoff struct {
	next time.Duration
}

// delay returns the wait before the next start of a child that ran for
// ran before it exited, and advances the sequence.
func (b *backoff) delay(ran time.Duration) time.Duration {
	if b.next == 0 || ran >= healthyRun {
		b.next = minRestartDelay
	}
	d := b.next
	b.next = min(2*b.next, maxRestartDelay)
	return d
}
