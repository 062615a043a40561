package devenv

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// KafkaOptions configure a local Kafka-protocol broker.
type KafkaOptions struct {
	// Port to listen on, 0 for a free one.
	Port int
	// Partitions of each seeded topic.
	Partitions int32
	// Topics created at start.
	Topics []string
	// DataDir persists records and committed offsets across restarts when set.
	DataDir string
	// SASL, when set, makes the broker require SASL with this one user.
	SASL *SASLUser
}

// SASLUser is a broker's SASL user: mechanism PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512.
type SASLUser struct {
	Mechanism, User, Password string
}

// Kafka is franz-go's kfake cluster on loopback: it speaks the Kafka
// protocol, with consumer groups and offset commits, so the ingestor talks
// to it exactly as to a real broker.
type Kafka struct {
	c *kfake.Cluster
}

// StartKafka starts a one-broker cluster on 127.0.0.1.
func StartKafka(o KafkaOptions) (*Kafka, error) {
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(o.Port),
		kfake.DefaultNumPartitions(int(o.Partitions)),
		kfake.AllowAutoTopicCreation(),
		// Short sessions keep crash recovery quick: a killed member's
		// partitions move after this long.
		kfake.GroupMinSessionTimeout(500 * time.Millisecond),
	}
	if len(o.Topics) > 0 {
		opts = append(opts, kfake.SeedTopics(o.Partitions, o.Topics...))
	}
	if o.SASL != nil {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(o.SASL.Mechanism, o.SASL.User, o.SASL.Password))
	}
	if o.DataDir != "" {
		opts = append(opts, kfake.DataDir(o.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start kafka broker: %w", err)
	}
	return &Kafka{c: c}, nil
}

// Addrs returns the broker addresses, host:port.
func (k *Kafka) Addrs() []string { return k.c.ListenAddrs() }

// Close stops the broker.
func (k *Kafka) Close() { k.c.Close() }
