package testutil

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the CPU time of the whole process, all threads, the
// garbage collector's included.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RowMeter reports rows/s and rows/cpu-s of a b.Loop benchmark: start it
// just before the loop, count Rows, and report once the last rows are
// written (a pipeline's final flush comes after the loop, and counts).
type RowMeter struct {
	start time.Time
	cpu0  time.Duration
	Rows  int64
}

// StartRows starts a RowMeter.
func StartRows() *RowMeter { return &RowMeter{start: time.Now(), cpu0: ProcessCPU()} }

// Report adds the rows/s and rows/cpu-s metrics to b.
func (m *RowMeter) Report(b *testing.B) {
	cpu := ProcessCPU() - m.cpu0
	b.ReportMetric(float64(m.Rows)/time.Since(m.start).Seconds(), "rows/s")
	if cpu > 0 {
		b.ReportMetric(float64(m.Rows)/cpu.Seconds(), "rows/cpu-s")
	}
}

// CPUSeconds is the process's CPU time since StartRows, in seconds.
func (m *RowMeter) CPUSeconds() float64 { return (ProcessCPU() - m.cpu0).Seconds() }
