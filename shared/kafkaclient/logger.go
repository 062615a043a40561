package kafkaclient

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Logger passes the Kafka client's warnings and errors (a broker that
// refuses the SASL handshake, a lost connection, a failed group join) to
// the role's logger, so that a client that keeps retrying does not do so
// silently. A message repeats at most once a second, with the number of
// lines suppressed since the last one: a client that retries in a tight
// loop (a recreated topic's fetches) must not fill the disk with logs.
func Logger(log *slog.Logger) kgo.Opt {
	return kgo.WithLogger(kgoLogger{log: log.With("component", "kafka"), limit: NewLimiter(time.Second)})
}

type kgoLogger struct {
	log   *slog.Logger
	limit *Limiter
}

func (kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	ok, suppressed := l.limit.Allow(msg)
	if !ok {
		return
	}
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	if suppressed > 0 {
		keyvals = append(keyvals, "suppressed", suppressed)
	}
	l.log.Log(context.Background(), lv, msg, keyvals...)
}

// Limiter lets one log line per key through per interval and counts the
// lines it holds back. Keys must be few (messages, reasons), not values.
type Limiter struct {
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]int
}

// NewLimiter returns a Limiter of one line per key per every.
func NewLimiter(every time.Duration) *Limiter {
	return &Limiter{every: every, now: time.Now, last: map[string]time.Time{}, suppressed: map[string]int{}}
}

// Allow reports whether a line of key may be logged now and, if so, how
// many lines of key were held back since the last one let through.
func (l *Limiter) Allow(key string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if last, ok := l.last[key]; ok && now.Sub(last) < l.every {
		l.suppressed[key]++
		return false, 0
	}
	n := l.suppressed[key]
	l.last[key], l.suppressed[key] = now, 0
	return true, n
}
