package supervisor

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		runs []time.Duration // how long the child ran before each exit
		want []time.Duration // the delay before each restart
	}{
		{name: "first restart", runs: []time.Duration{0}, want: []time.Duration{s}},
		{
			name: "doubles to the cap",
			runs: []time.Duration{0, s, 2 * s, 0, 0, 0, 0, 0},
			want: []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s},
		},
		{
			name: "healthy run resets",
			runs: []time.Duration{0, 0, 0, 60 * s, 0},
			want: []time.Duration{s, 2 * s, 4 * s, s, 2 * s},
		},
		{
			name: "just short of healthy does not reset",
			runs: []time.Duration{0, 0, 59 * s},
			want: []time.Duration{s, 2 * s, 4 * s},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b backoff
			for i, ran := range tt.runs {
				if got := b.delay(ran); got != tt.want[i] {
					t.Errorf("restart %d after a %s run: delay %s, want %s", i+1, ran, got, tt.want[i])
				}
			}
		})
	}
}
