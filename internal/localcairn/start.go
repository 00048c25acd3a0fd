package localcairn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/runpage"
)

// Local is cairn served by the emulator, as `cairn local up` serves it: the emulator,
// what cairn's stack made in it, and the environment its functions (and a shell) read.
type Local struct {
	Emulator *awslocal.Emulator
	Cairn    *Cairn
	// Env is the emulator's and cairn's environment, KEY=value: AWS_ENDPOINT_URL, dummy
	// credentials, CAIRN_BUCKET and the rest of the functions' variables (Cairn.Env).
	Env []string
}

// Close stops the emulator (its state stays in its Dir, if it has one).
func (l *Local) Close() error { return l.Emulator.Close() }

// StartOptions configures Start.
type StartOptions struct {
	// Emulator configures the emulator (Dir, Clock, Logger, CloudFormation timings...).
	Emulator awslocal.Options
	// Addr is where it listens (default 127.0.0.1:0, a free port).
	Addr string
	// Options are what cairn's stack is provisioned with.
	Options Options
	// Serving, when set, is told the emulator's URL as soon as it listens, before cairn is
	// provisioned (requests meanwhile wait: `cairn local wait` watches this).
	Serving func(url string) error
	// SetEnv exports Env into this process before the handlers are built, so handlers built
	// from the environment (HandlerFromEnv, as functions/ build them) reach the emulator
	// exactly as product code reaches AWS.
	SetEnv bool
	// Handlers builds the handlers to run in the emulator once cairn is provisioned (and
	// Env exported, with SetEnv); nil runs none.
	Handlers func(ctx context.Context, l *Local) (Handlers, error)
}

// Start is the one way a local cairn starts — `cairn local up`, the demo, and the test
// worlds: it starts the emulator on o.Addr, holding every request until cairn is ready;
// provisions cairn's stack (Provision, on the emulator's state when it has a Dir);
// registers the handlers; serves the pages of runs and plans (Pages, at PagesURL); and
// marks the emulator ready. The caller closes the Local.
func Start(ctx context.Context, o StartOptions) (*Local, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	eo := o.Emulator
	eo.HoldUntilReady = true
	e, err := awslocal.New(eo)
	if err != nil {
		return nil, err
	}
	if err := e.Start(o.Addr); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	l := &Local{Emulator: e}
	if err := l.provision(ctx, o); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	cfg, err := e.SetupConfig(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("serve the pages: %w", err), e.Close())
	}
	e.Mount(runpage.LocalPath, Pages(awsclient.S3(cfg), l.Cairn.Bucket))
	e.MarkReady()
	return l, nil
}

// PagesURL is where the pages of runs and plans and their index are served (Pages).
func (l *Local) PagesURL() string { return l.Emulator.URL() + runpage.LocalPath }

func (l *Local) provision(ctx context.Context, o StartOptions) error {
	e := l.Emulator
	if o.Serving != nil {
		if err := o.Serving(e.URL()); err != nil {
			return err
		}
	}
	c, err := Provision(ctx, e, o.Options)
	if err != nil {
		return err
	}
	l.Cairn = c
	l.Env = append(e.Env(), c.Env()...)
	if o.SetEnv {
		for _, kv := range l.Env {
			k, v, _ := strings.Cut(kv, "=")
			if err := os.Setenv(k, v); err != nil {
				return fmt.Errorf("export %s: %w", k, err)
			}
		}
	}
	if o.Handlers == nil {
		return nil
	}
	h, err := o.Handlers(ctx, l)
	if err != nil {
		return err
	}
	return c.Register(e, h)
}
