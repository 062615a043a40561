package consumer

// abandon ends the loop's Kafka client after a fatal error (a WAL write
// or an offset commit failed), as a crash would as far as the data goes:
// nothing more is rotated or committed, the revoke callback included,
// because the writer's state can no longer be trusted; the next start's
// recovery decides about every file. Unlike a crash it leaves the group,
// so that the partitions move at once rather than after the session.
//
// With BlockRebalanceOnPoll the client cannot leave while a poll's
// rebalance block is held: Close would wait for AllowRebalance forever,
// and the process would neither work nor exit. So the block goes first.
func (l *loop) abandon() {
	l.failed.Store(true)
	l.cl.AllowRebalance()
	l.cl.Close()
}
