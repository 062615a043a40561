package rpc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/rolestatus"
)

func TestProtocolIsGRPC(t *testing.T) {
	tc := startChild(t, "wait")
	proto, err := tc.client.Client()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := proto.(*plugin.GRPCClient); !ok {
		t.Fatalf("client protocol is %T, want *plugin.GRPCClient", proto)
	}
	if p := tc.client.ReattachConfig().Protocol; p != plugin.ProtocolGRPC {
		t.Errorf("negotiated protocol = %q, want grpc", p)
	}
	if err := tc.role.Drain(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestStatusDetailsCrossAsJSON(t *testing.T) {
	tc := startChild(t, "wait")
	ctx := ctxFor(t, 10*time.Second)
	since := time.Unix(0, 0).UTC()
	if err := tc.role.Pause(ctx, "orders", pause.Entry{By: "test", Since: since}); err != nil {
		t.Fatal(err)
	}
	st, err := tc.role.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := rolestatus.ConsumerDataset{Topic: "wait", Stalled: []string{"a", "b"}, Dropped: map[string]float64{"not_json": 3}}
	if c := st.Details.Consumer; c == nil || !reflect.DeepEqual(c.Datasets["clicks"], want) {
		t.Errorf("details.datasets.clicks = %#v, want %#v", st.Details.Consumer, want)
	}
	if got := operatorPauses(st)["orders"].Since; !got.Equal(since) {
		t.Errorf("details.datasets.orders.operator_pause.since = %v, want %v: the time as JSON writes it", got, since)
	}
	if err := tc.role.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// dialChild connects to the child's socket with creds, outside go-plugin.
func dialChild(t *testing.T, tc *testChild, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	addr := tc.client.ReattachConfig().Addr
	conn, err := grpc.NewClient("passthrough:///child",
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, addr.Network(), addr.String())
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// selfSigned makes a client certificate the supervisor did not make.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestOnlyTheSupervisorMayCall checks AutoMTLS: the child's socket refuses
// a caller without TLS and one whose client certificate the supervisor's
// go-plugin client did not make.
func TestOnlyTheSupervisorMayCall(t *testing.T) {
	tc := startChild(t, "wait")
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext": insecure.NewCredentials(),
		"foreign client certificate": credentials.NewTLS(&tls.Config{
			Certificates:       []tls.Certificate{selfSigned(t)},
			InsecureSkipVerify: true, // the test looks at the server's check of the client
			MinVersion:         tls.VersionTLS12,
		}),
	} {
		t.Run(name, func(t *testing.T) {
			conn := dialChild(t, tc, creds)
			ctx := ctxFor(t, 3*time.Second)
			err := conn.Invoke(ctx, methodStatus, new(emptypb.Empty), new(structpb.Struct))
			if err == nil {
				t.Fatal("a caller other than the supervisor got an answer")
			}
			in, _ := toStruct(pauseRequest{Dataset: "orders", Entry: &pause.Entry{By: "intruder"}})
			err = conn.Invoke(ctx, methodPause, in, new(emptypb.Empty))
			if err == nil {
				t.Fatal("a caller other than the supervisor paused the role")
			}
		})
	}
	// The supervisor's own client still works, and nothing was paused.
	st, err := tc.role.Status(ctxFor(t, 5*time.Second))
	if err != nil || st.State != rolestatus.StateRunning || len(operatorPauses(st)) != 0 {
		t.Fatalf("status = %+v, %v; want running and not paused", st, err)
	}
	if err := tc.role.Drain(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// TestKillDuringDrainFinishesTheDrain: go-plugin's Kill calls the
// controller's Shutdown, which stops the child's gRPC server; a child that
// is draining must still finish the drain and exit 0.
func TestKillDuringDrainFinishesTheDrain(t *testing.T) {
	// The race detector makes a process sleep 1s at exit; Kill waits 2s.
	tc := startChild(t, "wait", envDrainDelay+"=700ms", "GORACE=atexit_sleep_ms=0")
	// Start the drain; the answer is not waited for.
	if err := tc.role.Drain(ctxFor(t, 100*time.Millisecond)); err == nil {
		t.Fatal("drain of a 700ms drain answered within 100ms")
	}
	start := time.Now()
	tc.client.Kill() // Shutdown, then up to 2s for the exit, then SIGKILL
	took := time.Since(start)
	if code := tc.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code = %d after %s, want 0: the drain did not finish\n%s", code, took, tc.stderr.String())
	}
	if took < 400*time.Millisecond {
		t.Errorf("Kill returned after %s, before the 700ms drain could finish", took)
	}
	out := tc.stderr.String()
	for _, want := range []string{"finishing the drain", `"msg":"role stopped"`, `"msg":"drain requested"`} {
		if !strings.Contains(out, want) {
			t.Errorf("child stderr lacks %q:\n%s", want, out)
		}
	}
}

// TestKillWithoutDrainStopsAtOnce: Shutdown outside a drain ends the child
// at once, with code 1, without waiting for go-plugin's SIGKILL.
func TestKillWithoutDrainStopsAtOnce(t *testing.T) {
	tc := startChild(t, "wait", envDrainDelay+"=5s", "GORACE=atexit_sleep_ms=0")
	if _, err := tc.role.Status(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tc.client.Kill()
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("Kill took %s: the child waited for go-plugin's SIGKILL", took)
	}
	if code := tc.cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if out := tc.stderr.String(); !strings.Contains(out, "stopping at once") {
		t.Errorf("child stderr lacks the stop:\n%s", out)
	}
}
