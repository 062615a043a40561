package status

import (
	"context"
	"fmt"
	"io"
	"time"
)

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// Show writes one report in format.
func Show(ctx context.Context, w io.Writer, c *Collector, format string) error {
	r, err := c.Collect(ctx)
	if err != nil {
		return err
	}
	out, err := Format(r, format, c.Redactor())
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// Watch writes a report every interval until ctx ends, like top: the text
// view clears the screen and redraws; the JSON view writes one document
// after another, for a script to decode as a stream. Each report's rates
// cover the time since the previous one. It returns nil when ctx ends.
func Watch(ctx context.Context, w io.Writer, c *Collector, format string, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("watch interval %s is not positive", every)
	}
	for {
		r, err := c.Collect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		out, err := Format(r, format, c.Redactor())
		if err != nil {
			return err
		}
		if format == FormatText {
			out = append([]byte(clearScreen), out...)
		}
		if _, err := w.Write(out); err != nil {
			return fmt.Errorf("write status: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}
