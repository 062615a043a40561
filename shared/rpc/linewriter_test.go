package rpc

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// recordWriter keeps each Write as one string.
type recordWriter struct{ writes []string }

func (r *recordWriter) Write(p []byte) (int, error) {
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func TestLineWriter(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{name: "line then newline", chunks: []string{`{"msg":"a"}`, "\n"}, want: []string{"{\"msg\":\"a\"}\n"}},
		{name: "two lines in one chunk", chunks: []string{"a\nb\n"}, want: []string{"a\n", "b\n"}},
		{name: "split across chunks", chunks: []string{"ab", "c\nd", "e\n"}, want: []string{"abc\n", "de\n"}},
		{name: "incomplete line held back", chunks: []string{"a\nb"}, want: []string{"a\n"}},
		{name: "empty lines", chunks: []string{"\n\n"}, want: []string{"\n", "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordWriter{}
			w := &lineWriter{out: rec}
			for _, c := range tt.chunks {
				if n, err := w.Write([]byte(c)); n != len(c) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", c, n, err)
				}
			}
			if strings.Join(rec.writes, "|") != strings.Join(tt.want, "|") {
				t.Errorf("writes = %q, want %q", rec.writes, tt.want)
			}
		})
	}
}

func TestLineWriterFlushesOverlongLine(t *testing.T) {
	rec := &recordWriter{}
	w := &lineWriter{out: rec}
	long := bytes.Repeat([]byte("x"), maxLine+10)
	if _, err := w.Write(long); err != nil {
		t.Fatal(err)
	}
	if len(rec.writes) != 1 || len(rec.writes[0]) != len(long) {
		t.Fatalf("a line over %d bytes was held back", maxLine)
	}
}

func TestStdLogWriter(t *testing.T) {
	tests := []struct {
		line      string
		wantLevel string
		wantMsg   string
	}{
		{line: "[ERR] plugin: error creating yamux server: boom\n", wantLevel: "ERROR", wantMsg: "plugin: error creating yamux server: boom"},
		{line: "[WARN] something\n", wantLevel: "WARN", wantMsg: "something"},
		{line: "[DEBUG] plugin: plugin server: accept unix: closed\n", wantLevel: "", wantMsg: ""},
		{line: "no prefix\n", wantLevel: "INFO", wantMsg: "no prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			var buf bytes.Buffer
			w := &stdLogWriter{log: slog.New(slog.NewJSONHandler(&buf, nil))}
			if _, err := w.Write([]byte(tt.line)); err != nil {
				t.Fatal(err)
			}
			if tt.wantLevel == "" {
				if buf.Len() != 0 {
					t.Errorf("debug line logged at the default level: %s", buf.String())
				}
				return
			}
			var rec struct{ Level, Msg string }
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatalf("decode %q: %v", buf.String(), err)
			}
			if rec.Level != tt.wantLevel || rec.Msg != tt.wantMsg {
				t.Errorf("got %s %q, want %s %q", rec.Level, rec.Msg, tt.wantLevel, tt.wantMsg)
			}
		})
	}
}
