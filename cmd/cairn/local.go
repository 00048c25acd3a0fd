package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/localdir"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/target"
)

func init() { commands = append(commands, newLocalCmd) }

// localFunctions maps each Lambda function's name to a constructor of its handler (anything
// lambda.Start accepts). Each function adds its entry, from an init in
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
	local.AddCommand(newLocalUpCmd(), newLocalWaitCmd(), newLocalEnvCmd(), newLocalInvokeCmd(), newLocalTamperCmd(), newLocalFaultCmd())
	return local
}

func newLocalUpCmd() *cobra.Command {
	var addr, dir, logLevel, logFile, namespaces string
	var allowRemote bool
	var targets []string
	var o localcairn.Options
	var timings awslocal.CloudFormationTimings
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Serve the AWS emulator with cairn deployed in it, in the foreground until interrupted",
		Long: `Up serves the emulated AWS services (S3, SQS, SNS, SSM Parameter Store, CloudFormation,
EventBridge) on one loopback port, deploys into them cairn's own stack from the template
"make deploy" deploys to AWS (the bucket with its upload notifications, the queues, topics,
event rules, the drift schedule, the functions and their event source mappings, and the
exports cairn-bucket-name, cairn-ports-service-token and cairn-notifications-topic-arn), and
runs cairn's Lambda handlers in process, bound to the stack's functions.

Requests that arrive before all of that exists wait for it, so a script may start
"cairn local up &" and use it at once; "cairn local wait" waits for readiness and
"cairn local env" prints the environment a shell needs:
  cairn local up &
  cairn local wait && eval "$(cairn local env)"
Up prints one ready line and the same export lines; its log goes to --log-file
(default: local.log under --dir). State persists under --dir, so the next "local up"
sees it; one "local up" at a time may use a --dir.

The emulator has no authentication: whoever reaches its port reads every secret in it
(SecureString parameters decrypted, NoEcho values), cairn's bucket with its state, plans
and runs, and can push, approve and tamper. So it listens on loopback only: an --addr that
is not a loopback address (0.0.0.0, :4566, a LAN address, a host name) is refused unless
--allow-remote is given, and then a warning is printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			remote, err := remoteAddr(addr)
			if err != nil {
				return usageError{cmd: cmd, msg: "--addr: " + err.Error()}
			}
			if remote && !allowRemote {
				return refuse("local up: --addr %s listens beyond this machine's loopback: %s; listen on 127.0.0.1 (the default), or give --allow-remote if that is what you want", addr, exposes)
			}
			if remote {
				printer.Fprintf(cmd.ErrOrStderr(), "cairn local up: warning: --addr %s listens beyond this machine's loopback (--allow-remote): %s\n", addr, exposes)
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("local up: --log-level %q: want debug, info, warn or error", logLevel)
			}
			ns, err := config.ParseNamespaces(namespaces)
			if err != nil {
				return fmt.Errorf("local up: --namespaces: %w", err)
			}
			o.Namespaces = ns
			for _, s := range targets {
				t, err := target.Parse(s)
				if err != nil {
					return fmt.Errorf("local up: --targets: %w", err)
				}
				o.Targets = append(o.Targets, t)
			}
			return serveLocal(cmd, awslocal.Options{Dir: dir, CloudFormation: timings}, addr, logFile, level, o)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:4566", "address to listen on (127.0.0.1:0 picks a free port); a loopback address unless --allow-remote")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow an --addr beyond loopback, which serves every secret and all of cairn's state to whoever reaches it, with no authentication")
	cmd.Flags().StringVar(&dir, "dir", defaultLocalDir, `folder keeping the emulator's state ("" keeps it in memory)`)
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "least severe log level written: debug, info, warn or error")
	cmd.Flags().StringVar(&logFile, "log-file", "", "file the emulator and the in-process functions log to (default: "+localdir.LogFile+" under --dir; stderr with --dir \"\")")
	cmd.Flags().StringVar(&o.DriftSchedule, "drift-schedule", localcairn.DefaultDriftSchedule, "schedule expression of the drift function")
	cmd.Flags().StringVar(&o.PortPools, "port-pools", localcairn.DefaultPortPools, "port pools of Custom::PortAllocation, NAME=FIRST-LAST,...")
	cmd.Flags().StringVar(&namespaces, "namespaces", "", `namespaces cairn may manage, NS,... (the CDK context cairn:namespaces; "" allows every namespace)`)
	cmd.Flags().BoolVar(&o.CDKBootstrap, "cdk-bootstrap", false, "make what cdk bootstrap makes (stack CDKToolkit: staging bucket, image repository, bootstrap roles trusting cairn's account, version parameter) in cairn's account and region and in each of --targets, so a CDK app's cdk.out deploys unchanged")
	cmd.Flags().StringVar(&o.CDKQualifier, "cdk-qualifier", localcairn.DefaultCDKQualifier, "the bootstrap qualifier of --cdk-bootstrap (cdk bootstrap --qualifier)")
	cmd.Flags().StringSliceVar(&targets, "targets", nil, "other accounts and regions to deploy into, ACCOUNT:REGION,...: each gets the target stack (deploy role, event forwarding, ports topic)")
	timings.ResourceDelay, timings.ChangeSetDelay = time.Second, time.Second
	cmd.Flags().Var(&delayRange{&timings.ResourceDelay, &timings.ResourceDelayMax}, "resource-delay", "how long each resource operation of a stack takes, D or MIN..MAX (each drawn between them; cairn's own stack takes none)")
	cmd.Flags().Var(&delayRange{&timings.ChangeSetDelay, &timings.ChangeSetDelayMax}, "change-set-delay", "how long a change set takes to create, D or MIN..MAX (e.g. 2s..12s: each drawn between them, as they vary in AWS)")
	cmd.Flags().Uint64Var(&timings.DelaySeed, "delay-seed", 1, "seed of the delays drawn from MIN..MAX ranges: the same seed draws the same times")
	return cmd
}

// exposes says what an emulator reachable beyond loopback gives away.
const exposes = "whoever reaches it reads every secret in the emulator (SecureString parameters decrypted, NoEcho values) and cairn's bucket (state, plans, runs), and can push, approve and tamper, with no authentication"

// remoteAddr reports whether addr (HOST:PORT) listens beyond loopback: any host but
// localhost and a loopback IP, the empty host (every interface) included.
func remoteAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return false, nil
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback(), nil
}

// defaultLocalDir is where local up keeps its state, and where wait and env look.
const defaultLocalDir = ".cairn/local"

// serveLocal runs `cairn local up` until interrupted.
func serveLocal(cmd *cobra.Command, eo awslocal.Options, addr, logFile string, level slog.Level, o localcairn.Options) error {
	dir := eo.Dir
	began := time.Now()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var claim *localdir.Claim
	if dir != "" {
		var err error
		if claim, err = localdir.Acquire(dir); err != nil {
			printer.Fprintf(cmd.ErrOrStderr(), "cairn local up: %v\n", err)
			return exitError{1}
		}
		defer claim.Release()
		if logFile == "" {
			logFile = filepath.Join(dir, localdir.LogFile)
		}
	}
	logOut := cmd.ErrOrStderr()
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("local up: log file: %w", err)
		}
		defer f.Close()
		logOut = f
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	// The in-process functions log through the default logger, into the same file.
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(logger)

	eo.Logger = logger
	info := localdir.Info{Log: logFile}
	l, err := startLocal(ctx, eo, addr, o, func(url string) error {
		info.URL = url
		if claim == nil {
			return nil
		}
		// Published before provisioning, so "cairn local wait" can watch it get ready.
		return claim.Publish(info)
	})
	if err != nil {
		return fmt.Errorf("local up: %w", err)
	}
	info.Ready, info.Env = true, l.Env
	if claim != nil {
		if err := claim.Publish(info); err != nil {
			l.Close()
			return fmt.Errorf("local up: %w", err)
		}
	}
	printer.Lines(cmd.OutOrStdout(), info.Exports())
	printer.Fprintf(cmd.ErrOrStderr(), "cairn local: ready at %s in %.1fs (state in %s, log in %s, bucket %s, policy role %s, functions: %s%s); pages of the deployments, runs and plans at %s; Ctrl-C to stop\n",
		l.Emulator.URL(), time.Since(began).Seconds(), orMemory(dir), orStderr(logFile), l.Cairn.Bucket, l.Cairn.PolicyRole, orNone(l.functions), targetsNote(l.Cairn.Targets), l.PagesURL())
	<-ctx.Done()
	if err := l.Close(); err != nil {
		return fmt.Errorf("local up: stopping: %w", err)
	}
	printer.Fprintf(cmd.ErrOrStderr(), "cairn local: stopped; state saved in %s\n", orMemory(dir))
	return nil
}

func newLocalWaitCmd() *cobra.Command {
	var dir string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Wait until the emulator of \"cairn local up\" on --dir is ready",
		Long: `Wait returns (exit 0) as soon as the "cairn local up" holding --dir serves requests with
cairn provisioned, and fails (exit 1) when none runs there or it is not ready within
--timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return localWait(cmd, dir, timeout)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultLocalDir, "the --dir of the cairn local up to wait for")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up after this long")
	return cmd
}

// startGrace is how long wait gives a just-started "local up" to claim its folder.
const startGrace = 3 * time.Second

func localWait(cmd *cobra.Command, dir string, timeout time.Duration) error {
	began := time.Now()
	grace := min(timeout, startGrace)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	var info localdir.Info
	for {
		var err error
		info, err = localdir.Find(dir)
		switch {
		case errors.Is(err, localdir.ErrNotRunning):
			if time.Since(began) >= grace {
				printer.Fprintf(cmd.ErrOrStderr(), "cairn local wait: nothing runs on %s: start it with `cairn local up --dir %s &`\n", dir, dir)
				return exitError{1}
			}
		case err != nil:
			return fmt.Errorf("local wait: %w", err)
		case info.URL != "" && info.Ready && healthy(cmd.Context(), client, info.URL):
			// Ready in its file too: `local env` reads the exports from it, published once
			// provisioning ended (the health endpoint may say ready a moment before).
			printer.Fprintf(cmd.OutOrStdout(), "cairn local: ready at %s\n", info.URL)
			return nil
		}
		if time.Since(began) >= timeout {
			who := "cairn local up"
			if info.PID > 0 {
				who = fmt.Sprintf("cairn local up (pid %d)", info.PID)
			}
			printer.Fprintf(cmd.ErrOrStderr(), "cairn local wait: %s on %s is not ready after %s: see its log %s\n", who, dir, timeout, orDefault(info.Log, filepath.Join(dir, localdir.LogFile)))
			return exitError{1}
		}
		select {
		case <-tick.C:
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		}
	}
}

// healthy asks the emulator's health endpoint whether it is ready.
func healthy(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(url, "/")+"/_local/health", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h awslocal.Health
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Ready
}

func newLocalEnvCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the environment of the running \"cairn local up\" on --dir, for eval",
		Long: `Env prints the export lines of the emulator "cairn local up" serves on --dir
(AWS_ENDPOINT_URL, dummy credentials, CAIRN_BUCKET, ...), so a script writes
  eval "$(cairn local env)"
It fails (exit 1) when none runs there or it is not ready yet (see "cairn local wait").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := localdir.Find(dir)
			switch {
			case errors.Is(err, localdir.ErrNotRunning):
				printer.Fprintf(cmd.ErrOrStderr(), "cairn local env: nothing runs on %s: start it with `cairn local up --dir %s &`, then `cairn local wait --dir %s`\n", dir, dir, dir)
				return exitError{1}
			case err != nil:
				return fmt.Errorf("local env: %w", err)
			case !info.Ready:
				printer.Fprintf(cmd.ErrOrStderr(), "cairn local env: cairn local up (pid %d) on %s is still starting: run `cairn local wait --dir %s` first\n", info.PID, dir, dir)
				return exitError{1}
			}
			printer.Lines(cmd.OutOrStdout(), info.Exports())
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultLocalDir, "the --dir of the cairn local up")
	return cmd
}

// localCairn is cairn served by the emulator (localcairn.Start), with the functions of
// localFunctions it runs.
type localCairn struct {
	*localcairn.Local
	functions []string // registered
}

// startLocal starts cairn in an emulator on addr (localcairn.Start; serving is told its
// URL before cairn is provisioned), exports its environment into this process (the
// in-process handlers reach the emulator exactly as product code does: through the
// environment) and runs every function of localFunctions. The caller closes it.
func startLocal(ctx context.Context, eo awslocal.Options, addr string, o localcairn.Options, serving func(url string) error) (*localCairn, error) {
	lc := &localCairn{}
	l, err := localcairn.Start(ctx, localcairn.StartOptions{Emulator: eo, Addr: addr, Options: o, Serving: serving, SetEnv: true,
		Handlers: func(ctx context.Context, l *localcairn.Local) (localcairn.Handlers, error) {
			var h localcairn.Handlers
			slots := map[string]*any{
				localcairn.DeployerFunction: &h.Deployer,
				localcairn.PortsFunction:    &h.Ports,
				localcairn.DriftFunction:    &h.Drift,
				localcairn.PolicyFunction:   &h.Policy,
			}
			for _, name := range functionNames() {
				fn, err := localFunctions[name](ctx)
				if err == nil {
					if slot, ok := slots[name]; ok {
						*slot = fn
					} else {
						// Not one of cairn's four: invocable, but wired to nothing.
						err = l.Emulator.RegisterFunction(name, fn)
					}
				}
				if err != nil {
					return h, fmt.Errorf("function %s: %w", name, err)
				}
				lc.functions = append(lc.functions, name)
			}
			return h, nil
		}})
	if err != nil {
		return nil, err
	}
	lc.Local = l
	return lc, nil
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
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
				return exitError{1}
			}
			return printer.WriteJSON(cmd.OutOrStdout(), json.RawMessage(out), "")
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

// targetsNote lists the target stacks of the ready line: their accounts, regions and
// deploy roles.
func targetsNote(ts []localcairn.Target) string {
	if len(ts) == 0 {
		return ""
	}
	var parts []string
	for _, t := range ts {
		parts = append(parts, t.Target.String()+" (role_arn "+t.DeployRole+")")
	}
	return "; targets: " + strings.Join(parts, ", ")
}

func orStderr(file string) string {
	if file == "" {
		return "stderr"
	}
	return file
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orMemory(dir string) string {
	if dir == "" {
		return "memory"
	}
	return dir
}

// delayRange is the value of a delay flag: one duration, or MIN..MAX for delays drawn
// between the two.
type delayRange struct{ lo, hi *time.Duration }

func (d *delayRange) String() string {
	if d.lo == nil {
		return ""
	}
	if *d.hi > *d.lo {
		return d.lo.String() + ".." + d.hi.String()
	}
	return d.lo.String()
}

func (d *delayRange) Set(v string) error {
	lo, hi, isRange := strings.Cut(v, "..")
	l, err := time.ParseDuration(lo)
	if err != nil || l < 0 {
		return fmt.Errorf("%q is not a duration or a range MIN..MAX of durations (such as 1s or 2s..12s)", v)
	}
	h := l
	if isRange {
		if h, err = time.ParseDuration(hi); err != nil || h < l {
			return fmt.Errorf("%q: MAX of MIN..MAX is not a duration at least MIN (such as 2s..12s)", v)
		}
	}
	*d.lo, *d.hi = l, h
	return nil
}

func (d *delayRange) Type() string { return "duration[..max]" }
