package awsclient_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
)

// TestInvoker calls functions of the emulator as the deployer calls the policy function:
// an answer, a function that failed (Lambda's X-Amz-Function-Error), and one that does
// not exist, each told apart.
func TestInvoker(t *testing.T) {
	e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type req struct{ Name string }
	if err := e.RegisterFunction("echo", func(_ context.Context, r req) (string, error) { return "hello " + r.Name, nil }); err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterFunction("fails", func(context.Context, req) (string, error) { return "", errors.New("policies unreadable") }); err != nil {
		t.Fatal(err)
	}
	inv := awsclient.NewInvoker(cfg)
	tests := []struct {
		function, want, err string
		functionError       bool
	}{
		{"echo", `"hello shop"`, "", false},
		{"fails", "", "policies unreadable", true},
		{"missing", "", "invoke missing:", false},
	}
	for _, tt := range tests {
		t.Run(tt.function, func(t *testing.T) {
			out, err := inv.Invoke(ctx, tt.function, []byte(`{"Name": "shop"}`))
			if tt.err == "" {
				if err != nil || string(out) != tt.want {
					t.Fatalf("answer %s, %v; want %s", out, err, tt.want)
				}
				return
			}
			var fe *awsclient.FunctionError
			if err == nil || !strings.Contains(err.Error(), tt.err) || errors.As(err, &fe) != tt.functionError {
				t.Fatalf("error %v; want one holding %q (a function error: %v)", err, tt.err, tt.functionError)
			}
		})
	}
}
