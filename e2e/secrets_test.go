package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
)

// TestSecretsNeverLeak runs the ingestor with a SASL password from the
// environment, a catalog token from a file and Azure's shared key, then
// greps everything a user or a log pipeline sees (every process's logs,
// every /metrics and /status, `ingestor status` in both formats) for those
// secrets.
func TestSecretsNeverLeak(t *testing.T) {
	const kafkaSecret = "kafka-pl4nted-s3cret-7d1e"
	const tokenSecret = "catalog-pl4nted-t0ken-42aa"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tokenSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, in := newClicks(t, worldOptions{
		kafkaSASL:    &devenv.SASLUser{Mechanism: "SCRAM-SHA-512", User: "ingestor", Password: kafkaSecret},
		catalogExtra: map[string]string{"token": "${file:" + tokenFile + "}"},
	})
	defer in.dumpLogs()
	secrets := []string{kafkaSecret, tokenSecret, w.az.Key()}

	p := in.start("run")
	good, _ := w.produceMixed(t, clicksTopic, 0, 3000, 50)
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 2*time.Minute)

	var seen strings.Builder
	for _, addr := range in.metrics {
		for _, path := range []string{"/metrics", "/status"} {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			seen.Write(b)
		}
	}
	for _, format := range []string{"text", "json"} {
		out, err := exec.Command(binary, "status", "--config", in.cfgPath, "--output", format).CombinedOutput()
		if err != nil {
			t.Fatalf("status --output %s: %v\n%s", format, err, out)
		}
		if !strings.Contains(string(out), "clicks") {
			t.Fatalf("status --output %s shows no dataset:\n%s", format, out)
		}
		seen.Write(out)
	}

	p.signal(syscall.SIGTERM)
	p.wait(t, 96*time.Second)
	logs, _ := filepath.Glob(filepath.Join(in.dir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		seen.Write(b)
	}
	all := seen.String()
	for _, s := range secrets {
		if strings.Contains(all, s) {
			i := strings.Index(all, s)
			t.Errorf("secret %q…%q leaked: …%s…", s[:4], s[len(s)-4:], all[max(0, i-200):i])
		}
	}
	t.Logf("e2e: %d bytes of logs, metrics and status output hold none of %d planted secrets", len(all), len(secrets))
}
