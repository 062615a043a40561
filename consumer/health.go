package consumer

import (
	"errors"
	"fmt"

	pmetrics "github.com/icewal/ingestor/shared/metrics"
)

// Healthy is the consumer's /healthz verdict: an error while the watchdog
// of any dataset reports a stall (ingestor_consumer_stalled is 1), so
// that a liveness probe restarts a consumer that reads nothing. The
// watchdog mends what it can meanwhile, and ends the consumer itself when
// the mend does not help (watchdog.go); the probe also catches a consumer
// too stuck to end.
func (c *Consumer) Healthy() error {
	var errs []error
	for _, s := range pmetrics.Read(c.m.stalled) {
		if s.Value > 0 {
			errs = append(errs, fmt.Errorf("dataset %s: consumer stalled (%s): see its watchdog's error line", s.Labels["dataset"], s.Labels["reason"]))
		}
	}
	return errors.Join(errs...)
}
