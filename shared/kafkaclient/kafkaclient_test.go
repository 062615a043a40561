package kafkaclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/config"
)

// roundTrip produces one record and reads it back with the options of k.
func roundTrip(t *testing.T, k config.Kafka, limit time.Duration) error {
	t.Helper()
	opts, err := Opts(k)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("t"), kgo.ConsumeTopics("t"),
		kgo.RequestRetries(1), kgo.RetryTimeout(3*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		return err
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		return err
	}
	if fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "hello" {
		t.Fatalf("read back %d records", fs.NumRecords())
	}
	return nil
}

func TestSASL(t *testing.T) {
	const secret = "pl4nted-s3cret-9f2b"
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.EnableSASL(),
				kfake.Superuser(mech, "ingestor", secret))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			k := config.Kafka{Brokers: c.ListenAddrs(), ClientID: "test",
				SASL: &config.KafkaSASL{Mechanism: mech, Username: "ingestor", Password: secret}}
			if err := roundTrip(t, k, 10*time.Second); err != nil {
				t.Fatalf("with the right password: %v", err)
			}
			k.SASL.Password = "wrong-" + secret
			err = roundTrip(t, k, 2*time.Second)
			if err == nil {
				t.Fatal("a wrong password was accepted")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

func TestOAuthBearerSendsToken(t *testing.T) {
	k := config.Kafka{Brokers: []string{"127.0.0.1:1"}, SASL: &config.KafkaSASL{Mechanism: "OAUTHBEARER", Token: "tok-123"}}
	m, err := mechanism(k.SASL)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "OAUTHBEARER" {
		t.Fatalf("mechanism %s", m.Name())
	}
	_, first, err := m.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), "auth=Bearer tok-123") {
		t.Fatalf("client-first message %q carries no bearer token", first)
	}
}

// pki is a throwaway CA with one server and one client certificate.
type pki struct {
	dir        string
	ca         *x509.Certificate
	caKey      *ecdsa.PrivateKey
	caFile     string
	serverCert tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caFile = filepath.Join(p.dir, "ca.pem")
	os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	certFile, keyFile := p.issue(t, "server", x509.ExtKeyUsageServerAuth)
	p.serverCert, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pki) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.TLS(&tls.Config{
		Certificates: []tls.Certificate{p.serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	certFile, keyFile := p.issue(t, "client", x509.ExtKeyUsageClientAuth)
	k := config.Kafka{Brokers: c.ListenAddrs(), ClientID: "test",
		TLS: &config.KafkaTLS{CAFile: p.caFile, CertFile: certFile, KeyFile: keyFile}}
	if err := roundTrip(t, k, 10*time.Second); err != nil {
		t.Fatalf("mutual TLS: %v", err)
	}
	k.TLS = &config.KafkaTLS{CAFile: p.caFile}
	if err := roundTrip(t, k, 2*time.Second); err == nil {
		t.Fatal("a client without a certificate was let in")
	}
}

func TestOptsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for _, tc := range []struct {
		name string
		k    config.Kafka
		want string
	}{
		{"missing ca", config.Kafka{TLS: &config.KafkaTLS{CAFile: filepath.Join(dir, "none.pem")}}, "kafka.tls.caFile"},
		{"ca not pem", config.Kafka{TLS: &config.KafkaTLS{CAFile: notPEM}}, "holds no PEM certificate"},
		{"bad client cert", config.Kafka{TLS: &config.KafkaTLS{CertFile: notPEM, KeyFile: notPEM}}, "kafka.tls.certFile/keyFile"},
		{"bad mechanism", config.Kafka{SASL: &config.KafkaSASL{Mechanism: "GSSAPI"}}, "kafka.sasl.mechanism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Opts(tc.k); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Opts error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestLimiterLetsOneLinePerKeyPerInterval(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(time.Second)
	l.now = func() time.Time { return at }
	if ok, n := l.Allow("fetch"); !ok || n != 0 {
		t.Fatalf("first line: %v, %d suppressed", ok, n)
	}
	for range 1000 {
		if ok, _ := l.Allow("fetch"); ok {
			t.Fatal("a repeat within the interval was let through")
		}
	}
	if ok, _ := l.Allow("other"); !ok {
		t.Fatal("another key was held back")
	}
	at = at.Add(time.Second)
	if ok, n := l.Allow("fetch"); !ok || n != 1000 {
		t.Fatalf("after the interval: %v, %d suppressed, want true and 1000", ok, n)
	}
}
