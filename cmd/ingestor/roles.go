package main

import (
	"context"
	"fmt"

	"github.com/icewal/ingestor/committer"
	"github.com/icewal/ingestor/consumer"
	"github.com/icewal/ingestor/maintainer"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rolestatus"
	"github.com/icewal/ingestor/uploader"
)

// runner is what every role constructor returns: Run works until ctx ends,
// then drains in order within cfg.DrainTimeout() and returns.
type runner interface {
	Run(ctx context.Context) error
}

// newRole builds the named role.
func newRole(name string, cfg *config.Config, opts role.Options) (runner, error) {
	switch name {
	case role.Consumer:
		c, err := consumer.New(cfg, opts)
		if err != nil {
			return nil, fmt.Errorf("new consumer: %w", err)
		}
		return c, nil
	case role.Uploader:
		u, err := uploader.New(cfg, opts)
		if err != nil {
			return nil, fmt.Errorf("new uploader: %w", err)
		}
		return u, nil
	case role.Committer:
		c, err := committer.New(cfg, opts)
		if err != nil {
			return nil, fmt.Errorf("new committer: %w", err)
		}
		return c, nil
	case role.Maintainer:
		m, err := maintainer.New(cfg, opts)
		if err != nil {
			return nil, fmt.Errorf("new maintainer: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown role %q", name)
}

// statusOf returns the role's Status method, which tells an operator what
// the role is doing (see shared/rolestatus and internal/status), as the
// envelope's details, or nil when it has none.
func statusOf(r runner) func() rolestatus.Details {
	switch r := r.(type) {
	case *consumer.Consumer:
		return func() rolestatus.Details { b := r.Status(); return rolestatus.Details{Consumer: &b} }
	case *uploader.Uploader:
		return func() rolestatus.Details { b := r.Status(); return rolestatus.Details{Uploader: &b} }
	case *committer.Committer:
		return func() rolestatus.Details { b := r.Status(); return rolestatus.Details{Committer: &b} }
	case *maintainer.Maintainer:
		return func() rolestatus.Details { b := r.Status(); return rolestatus.Details{Maintainer: &b} }
	}
	return nil
}
