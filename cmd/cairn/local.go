package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/localcairn"
)

func init() { commands = append(commands, newLocalCmd) }

// localFunctions maps each Lambda function's name to a constructor of its handler (anything
// lambda.Start accepts). The issue that builds a function adds its entry, from an init in
// its own file, so that `cairn local up` runs it in process and `cairn local invoke` calls
// it. Constructors run after the emulator's and cairn's environment (AWS_ENDPOINT_URL,
// CAIRN_BUCKET, ...) is set, so what they build from the environment talks to the
// emulator. The deployer, ports and drift functions are wired to their queues and schedule
// as in AWS (localcairn); any other function is only invocable.
var localFunctions = map[string]func(ctx context.Context) (any, error){}

func newLocalCmd() *cobra.Command {
	local := &cobra.Command{
		Use:   "local",
		Short: "Run cairn against the embedded AWS emulator",
	}
	local.AddCommand(newLocalUpCmd(), newLocalInvokeCmd(), newLocalTamperCmd())
	return local
}

func newLocalUpCmd() *cobra.Command {
	var addr, dir string
	var o localcairn.Options
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Serve the AWS emulator with cairn deployed in it, in the foreground until interrupted",
		Long: `Up serves the emulated AWS services (S3, SQS, SNS, CloudFormation, EventBridge) on one
loopback port, creates in them what "make deploy" creates in AWS (the bucket with its
upload notifications, the queues, topics, event rules, the drift schedule and the exports
cairn-bucket-name, cairn-ports-service-token and cairn-notifications-topic-arn), and runs
cairn's Lambda handlers in process, wired as in AWS.

It prints the environment a shell needs; paste it, or run
  eval "$(cairn local up ... | grep ^export)"
from a script. State persists under --dir, so the next "local up" sees it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			l, err := startLocal(ctx, awslocal.Options{Dir: dir, Logger: logger}, addr, o)
			if err != nil {
				return fmt.Errorf("local up: %w", err)
			}
			out := cmd.OutOrStdout()
			for _, kv := range l.env {
				fmt.Fprintf(out, "export %s\n", kv)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cairn local: serving %s (state in %s, bucket %s, functions: %s); Ctrl-C to stop\n",
				l.e.URL(), orMemory(dir), l.c.Bucket, orNone(l.functions))
			<-ctx.Done()
			if err := l.e.Close(); err != nil {
				return fmt.Errorf("local up: stopping: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cairn local: stopped; state saved in %s\n", orMemory(dir))
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:4566", "address to listen on (127.0.0.1:0 picks a free port)")
	cmd.Flags().StringVar(&dir, "dir", ".cairn/local", `folder keeping the emulator's state ("" keeps it in memory)`)
	cmd.Flags().StringVar(&o.DriftSchedule, "drift-schedule", localcairn.DefaultDriftSchedule, "schedule expression of the drift function")
	cmd.Flags().StringVar(&o.PortPools, "port-pools", localcairn.DefaultPortPools, "port pools of Custom::PortAllocation, NAME=FIRST-LAST,...")
	return cmd
}

// localCairn is an emulator serving cairn, with its handlers registered.
type localCairn struct {
	e         *awslocal.Emulator
	c         *localcairn.Cairn
	env       []string // KEY=value: the emulator's and cairn's environment
	functions []string // registered
}

// startLocal starts an emulator on addr, provisions cairn in it, exports the environment
// into this process (the in-process handlers reach the emulator exactly as product code
// does: through the environment) and registers every function of localFunctions. The
// caller closes l.e.
func startLocal(ctx context.Context, eo awslocal.Options, addr string, o localcairn.Options) (*localCairn, error) {
	e, err := awslocal.New(eo)
	if err != nil {
		return nil, err
	}
	if err := e.Start(addr); err != nil {
		e.Close()
		return nil, err
	}
	l := &localCairn{e: e}
	if l.c, err = localcairn.Provision(ctx, e, o); err != nil {
		e.Close()
		return nil, err
	}
	l.env = append(e.Env(), l.c.Env()...)
	for _, kv := range l.env {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	var h localcairn.Handlers
	slots := map[string]*any{
		localcairn.DeployerFunction: &h.Deployer,
		localcairn.PortsFunction:    &h.Ports,
		localcairn.DriftFunction:    &h.Drift,
	}
	for _, name := range functionNames() {
		fn, err := localFunctions[name](ctx)
		if err == nil {
			if slot, ok := slots[name]; ok {
				*slot = fn
			} else {
				// Not one of cairn's three: invocable, but wired to nothing.
				err = e.RegisterFunction(name, fn)
			}
		}
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("function %s: %w", name, err)
		}
		l.functions = append(l.functions, name)
	}
	if err := l.c.Register(e, h); err != nil {
		e.Close()
		return nil, err
	}
	return l, nil
}

func newLocalInvokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "invoke FUNCTION FILE.json",
		Short: "Invoke one Lambda handler in process with an event file (see events/)",
		Long: `Invoke calls a Lambda handler of cairn in process with the event in FILE.json, with a
deadline like Lambda's, and prints its JSON response. AWS calls the handler makes go where
the environment points (run "cairn local up" and export its environment to use the emulator).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, file := args[0], args[1]
			newHandler, ok := localFunctions[name]
			if !ok {
				return fmt.Errorf("local invoke: unknown function %q, known: %s", name, orNone(functionNames()))
			}
			payload, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("local invoke %s: %w", name, err)
			}
			if !json.Valid(payload) {
				return fmt.Errorf("local invoke %s: %s is not JSON: pass an event file such as events/sqs-message.json", name, file)
			}
			h, err := newHandler(cmd.Context())
			if err != nil {
				return fmt.Errorf("local invoke %s: build handler: %w", name, err)
			}
			e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))})
			if err != nil {
				return fmt.Errorf("local invoke %s: %w", name, err)
			}
			defer e.Close()
			if err := e.RegisterFunction(name, h); err != nil {
				return fmt.Errorf("local invoke: %w", err)
			}
			out, err := e.Invoke(cmd.Context(), name, payload)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
				return exitError{1}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
			return nil
		},
	}
}

func functionNames() []string {
	names := make([]string, 0, len(localFunctions))
	for n := range localFunctions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none registered yet"
	}
	return strings.Join(names, ", ")
}

func orMemory(dir string) string {
	if dir == "" {
		return "memory"
	}
	return dir
}
