// Package kafkaclient turns the configuration's kafka section into
// franz-go client options: brokers, client id, TLS and SASL. The consumer
// (which reads the topics and commits offsets) and the committer (which
// checks committed offsets before adding a file) connect the same way.
package kafkaclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/icewal/ingestor/shared/config"
)

// Opts returns the client options of the kafka section. Errors name the
// configuration key and never a secret.
func Opts(k config.Kafka) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ClientID(k.ClientID)}
	if k.TLS != nil {
		tc, err := tlsConfig(k.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if k.SASL != nil {
		m, err := mechanism(k.SASL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func tlsConfig(t *config.KafkaTLS) (*tls.Config, error) { return TLSConfig(t, "kafka.tls") }

// TLSConfig builds the client TLS settings of a tls block (the brokers',
// a schema registry's); errors name the block's keys under key.
func TLSConfig(t *config.KafkaTLS, key string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.caFile: %w", key, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.caFile: %s holds no PEM certificate", key, t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s.certFile/keyFile: load client certificate %s: %w", key, t.CertFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func mechanism(s *config.KafkaSASL) (sasl.Mechanism, error) {
	switch s.Mechanism {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	case "OAUTHBEARER":
		token := s.Token
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: token}, nil
		}), nil
	}
	return nil, fmt.Errorf("kafka.sasl.mechanism: unsupported %q", s.Mechanism)
}
