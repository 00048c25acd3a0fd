package crashtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/deployer"
	"github.com/cairn-dev/cairn/internal/localcairn"
)

var epoch = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

const (
	// speed is how much virtual time passes per millisecond of wall time.
	speed = 500 * time.Millisecond
	// lease is the deployer's lock lease: long against a step on a loaded machine (an hour
	// is 7 s of wall time), short enough that a lock left by a dead run frees itself
	// within the wait for a world to settle.
	lease = time.Hour
	// settleTimeout bounds, in wall time, the wait for a world to settle.
	settleTimeout = 90 * time.Second
)

// world is the emulator provisioned as `cairn local up` provisions it, on a virtual clock,
// with the deployer behind the deploy queue. The deployer's AWS clients carry the crash
// injector; the world's own clients (s3, cfn, sqs) do not.
type world struct {
	t     testing.TB
	em    *awslocal.Emulator
	clk   *clock.Fake
	cairn *localcairn.Cairn
	inj   *injector
	s3    *s3.Client
	cfn   *cloudformation.Client
	sqs   *sqs.Client
	logs  *syncBuffer

	deployerCfg    aws.Config
	deployerLogger *slog.Logger
	mu             sync.Mutex
	process        func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) // nil: the next invocation starts a fresh process
	processes      int

	// A world on a --dir can be restarted as `cairn local up` is: stopped, and started
	// again on the same folder and address (restarts crash points).
	emOpts    awslocal.Options
	addr      string
	restartMu sync.Mutex // one restart at a time
	restarts  int        // asked for
	restarted int        // done
}

// newWorld builds a world; with dir set its emulator keeps its state there, as `cairn
// local up --dir` does, so it can be restarted.
func newWorld(t testing.TB, inj *injector, dir string) *world {
	t.Helper()
	ctx := context.Background()
	w := prepareWorld(t, inj, dir)
	local, err := w.start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := local.Emulator.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.s3, w.cfn, w.sqs = awsclient.S3(cfg), cloudformation.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	return w
}

// prepareWorld builds a world that is not started yet: its options, its running virtual
// clock, and the clean-up that stops both.
func prepareWorld(t testing.TB, inj *injector, dir string) *world {
	w := &world{t: t, clk: clock.NewFake(epoch), inj: inj, logs: &syncBuffer{}, addr: "127.0.0.1:0"}
	inj.clock = w.clk
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	w.emOpts = awslocal.Options{Dir: dir, Clock: w.clk, Logger: logger,
		CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: 2 * time.Second, ChangeSetDelay: time.Second}}
	if dir != "" {
		inj.restart = w.restart
	}
	stop, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				// The virtual clock stands still while the emulator restarts: stopping
				// it waits for its HTTP server, seconds of wall time that would be
				// virtual hours.
				if !w.inRestart() {
					w.clk.Advance(speed)
				}
			}
		}
	}()
	t.Cleanup(func() {
		w.waitRestarts()
		close(stop)
		<-ticked
		if em := w.emulator(); em != nil {
			em.Close()
		}
		if t.Failed() {
			t.Logf("emulator and deployer logs (last 300 lines):\n%s", tail(w.logs.String(), 300))
		}
	})
	return w
}

// start starts cairn in the emulator on the world's address and --dir (localcairn.Start,
// as `cairn local up` does), its deployer the world's: handle, in a process of its own.
//
// The deployer runs as soon as it is registered, before Start returns: provisioning
// queued the s3:TestEvent of the bucket's notifications, and the event source mapping
// delivers it at once. So the first start publishes, under w.mu and before registering,
// everything an invocation reads (the emulator, cairn's resources, the deployer's
// configuration); setting them after Start returned once let that first invocation find
// no cairn, panic in newProcess and leave w.mu locked for good.
func (w *world) start(ctx context.Context) (*localcairn.Local, error) {
	return localcairn.Start(ctx, localcairn.StartOptions{Emulator: w.emOpts, Addr: w.addr, Options: localcairn.Options{Namespaces: []string{"shop"}},
		Handlers: func(ctx context.Context, l *localcairn.Local) (localcairn.Handlers, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.cairn == nil { // the first start (a restart keeps the address, and so the configuration)
				cfg, err := l.Emulator.AWSConfig(ctx)
				if err != nil {
					return localcairn.Handlers{}, err
				}
				w.em, w.cairn = l.Emulator, l.Cairn
				w.addr = strings.TrimPrefix(l.Emulator.URL(), "http://")
				// The deployer's configuration: the retries awsclient.Load gives it in AWS,
				// and the crash injector on every client.
				w.deployerCfg = cfg.Copy()
				w.deployerCfg.Retryer = func() aws.Retryer {
					return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = awsclient.MaxAttempts })
				}
				w.deployerCfg.APIOptions = append(w.deployerCfg.APIOptions, w.inj.middleware)
				w.deployerLogger = w.emOpts.Logger
			}
			return localcairn.Handlers{Deployer: w.handle}, nil
		}})
}

// emulator returns the emulator running now.
func (w *world) emulator() *awslocal.Emulator {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.em
}

// restart stops `cairn local up` and starts it again on the same --dir and address, as a
// user does after killing it, in the background: the killed invocation that asks for it
// runs on one of the emulator's pollers, which stopping waits for.
func (w *world) restart(p point) {
	w.mu.Lock()
	w.restarts++
	old := w.em
	w.mu.Unlock()
	go func() {
		defer func() {
			w.mu.Lock()
			w.restarted++
			w.mu.Unlock()
		}()
		w.restartMu.Lock()
		defer w.restartMu.Unlock()
		if w.emulator() != old {
			return // another crash point restarted it meanwhile
		}
		ctx := context.Background()
		w.emOpts.Logger.Info("crashtest: stopping the emulator", "point", p.String())
		if err := old.Close(); err != nil {
			// Its server did not stop in time (a long poll in progress): what matters,
			// its state saved and its port free, is done.
			w.t.Logf("restart at %s: stopping the emulator: %v", p, err)
		}
		local, err := w.start(ctx)
		if err != nil {
			w.t.Errorf("restart at %s: start the emulator again on %s: %v", p, w.emOpts.Dir, err)
			return
		}
		em, c := local.Emulator, local.Cairn
		if c.Bucket != w.cairn.Bucket || c.Deploy.URL != w.cairn.Deploy.URL {
			w.t.Errorf("restart at %s: cairn's stack came back with bucket %s and deploy queue %s, was %s and %s", p, c.Bucket, c.Deploy.URL, w.cairn.Bucket, w.cairn.Deploy.URL)
		}
		w.mu.Lock()
		w.em = em
		w.mu.Unlock()
		w.emOpts.Logger.Info("crashtest: the emulator was restarted", "point", p.String())
	}()
}

// restartsAsked is how many restarts crash points asked for so far.
func (w *world) restartsAsked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restarts
}

// inRestart reports whether a restart is under way.
func (w *world) inRestart() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restarts != w.restarted
}

// handle is the deployer function as the emulator invokes it. Each invocation runs in the
// current process, or in a fresh one after a crash; a crashed invocation fails as a
// killed Lambda does, so its whole batch returns to the queue after the visibility
// timeout.
func (w *world) handle(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	process, err := w.currentProcess()
	if err != nil {
		return resp, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	inv := &invocation{cancel: cancel}
	w.inj.begin(inv)
	defer w.inj.end()
	defer func() {
		p := inv.crash()
		if p == nil {
			return
		}
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
		}
		w.mu.Lock()
		w.process = nil // the process died with it
		w.mu.Unlock()
		resp, err = events.SQSEventResponse{}, fmt.Errorf("crashtest: the deployer was killed %s", *p)
	}()
	return process(context.WithValue(ctx, invocationKey{}, inv), ev)
}

// currentProcess is the deployer process running now, started afresh when the last one
// died. It unlocks w.mu by defer: a panic while a process starts fails that invocation
// (the emulator recovers it, as Lambda reports a crashed function), not the whole world.
func (w *world) currentProcess() (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.process == nil {
		process, err := w.newProcess()
		if err != nil {
			return nil, err
		}
		w.process = process
		w.processes++
	}
	return w.process, nil
}

// newProcess starts a deployer process: what functions/deployer builds at a cold start,
// with the world's clock and a lease suited to it.
func (w *world) newProcess() (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	d, err := deployer.NewFromAWS(w.deployerCfg, deployer.Config{
		Bucket: w.cairn.Bucket, QueueURL: w.cairn.Deploy.URL, Topic: w.cairn.Notifications,
		Heartbeat: localcairn.LocalHeartbeatSeconds * time.Second, Lease: lease,
		Clock: w.clk, Logger: w.deployerLogger,
	})
	if err != nil {
		return nil, err
	}
	return d.Handle, nil
}

// push uploads a bundle as deployments/NAME.zip, as `aws s3 cp` (or `cairn push`) does,
// and returns its version id.
func (w *world) push(deployment string, zip []byte) string {
	w.t.Helper()
	for {
		w.waitRestarts()
		restarts := w.restartsAsked()
		out, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{
			Bucket: aws.String(w.cairn.Bucket), Key: aws.String(uploadKey(deployment)), Body: bytes.NewReader(zip),
			Metadata: map[string]string{"git-ref": gitRef, "git-remote": gitRemote},
		})
		if err != nil && w.restartsAsked() != restarts {
			continue // the emulator went down meanwhile: push again once it is back
		}
		if err != nil {
			w.t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}
}

// waitRestarts waits until no restart is under way.
func (w *world) waitRestarts() {
	for w.inRestart() {
		time.Sleep(5 * time.Millisecond)
	}
}

const (
	gitRef    = "0123456789abcdef0123456789abcdef01234567"
	gitRemote = "https://example.com/shop.git"
)

// settle waits until nothing can happen any more: the deploy queue holds no message
// (visible, in flight or delayed), no stack operation is in progress, and the deployer made
// no call since the previous look, half a virtual minute earlier.
func (w *world) settle() error {
	ctx := context.Background()
	deadline := time.Now().Add(settleTimeout)
	quietSince, quietCalls := time.Time{}, -1
	for time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		restarts := w.restartsAsked()
		if w.inRestart() {
			quietSince, quietCalls = w.clk.Now(), -1
			continue
		}
		busy, err := w.busy(ctx)
		if err != nil && (w.inRestart() || w.restartsAsked() != restarts) {
			continue // the emulator went down while it was asked: look again once it is back
		}
		if err != nil {
			return err
		}
		calls := w.inj.activity()
		switch {
		case busy != "" || calls != quietCalls:
			quietSince, quietCalls = w.clk.Now(), calls
			if busy != "" {
				quietCalls = -1
			}
		case w.clk.Now().Sub(quietSince) >= 30*time.Second && w.restartsAsked() == restarts:
			return nil
		}
	}
	busy, _ := w.busy(ctx)
	return fmt.Errorf("the world did not settle in %s of wall time (%s of virtual time): %s", settleTimeout, w.clk.Now().Sub(epoch).Round(time.Second), busy)
}

// busy says what is still going on, or "".
func (w *world) busy(ctx context.Context) (string, error) {
	in, err := queueCounts(ctx, w.sqs, w.cairn.Deploy.URL)
	if err != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return "", fmt.Errorf("deploy queue attributes (restarts asked %d, done %d): %w", w.restarts, w.restarted, err)
	}
	if in != "" {
		return "deploy queue " + in, nil
	}
	live, err := w.liveStacks(ctx)
	if err != nil {
		return "", err
	}
	for name, st := range live {
		if strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") {
			return "stack " + name + " " + string(st.StackStatus), nil
		}
	}
	return "", nil
}

// queueCounts says what a queue holds (visible, in flight, delayed), or "" when nothing.
func queueCounts(ctx context.Context, c *sqs.Client, url string) (string, error) {
	q, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		return "", err
	}
	var counts []string
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		if n := q.Attributes[a]; n != "0" {
			counts = append(counts, a+"="+n)
		}
	}
	return strings.Join(counts, " "), nil
}

// deadLetters is how many messages the deploy queue moved to its dead-letter queue.
func (w *world) deadLetters(ctx context.Context) (string, error) {
	q, err := w.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(w.cairn.DeployDLQ.URL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		return "", fmt.Errorf("dead-letter queue attributes: %w", err)
	}
	return q.Attributes["ApproximateNumberOfMessages"], nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
