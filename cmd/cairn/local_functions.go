package main

import (
	"context"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/deployer"
	"github.com/cairn-dev/cairn/internal/judge"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/ports"
)

// The deployer, policy and ports functions as `cairn local up` and `cairn local invoke` run them,
// built from the environment exactly as functions/deployer, functions/policy and functions/ports build them
// in Lambda. (The drift function adds itself in drift.go.)
func init() {
	localFunctions[localcairn.DeployerFunction] = func(ctx context.Context) (any, error) {
		h, err := deployer.HandlerFromEnv(ctx)
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	localFunctions[localcairn.PolicyFunction] = func(ctx context.Context) (any, error) {
		h, err := judge.HandlerFromEnv(ctx)
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	localFunctions[localcairn.PortsFunction] = func(ctx context.Context) (any, error) {
		cfg, err := ports.ConfigFromEnv()
		if err != nil {
			return nil, err
		}
		awsCfg, err := awsclient.Load(ctx)
		if err != nil {
			return nil, err
		}
		h, err := ports.NewHandler(awsclient.S3(awsCfg), cfg)
		if err != nil {
			return nil, err
		}
		return h.HandleSQS, nil
	}
}
