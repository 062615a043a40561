package kafkaclient

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Logger passes the Kafka client's warnings and errors (a broker that
// refuses the SASL handshake, a lost connection, a failed group join) to
// the role's logger, so that a client that keeps retrying does not do so
// silently.
func Logger(log *slog.Logger) kgo.Opt {
	return kgo.WithLogger(kgoLogger{log: log.With("component", "kafka")})
}

type kgoLogger struct{ log *slog.Logger }

func (kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	l.log.Log(context.Background(), lv, msg, keyvals...)
}
