// Package crashtest is the deployer's crash suite; it holds tests only.
//
// Each test builds a world: the emulator on a virtual clock, provisioned by localcairn as
// `cairn local up` provisions it (bucket notifications, the deploy queue with its
// visibility timeout and dead-letter queue, the stack event rule), with the deployer Lambda
// behind the deploy queue's event source mapping. A scenario pushes a bundle, then a
// second one that updates, creates and deletes stacks, as a user would with
// `aws s3 cp`. The deployer is driven only through its Lambda handler, given the exact SQS
// events the emulator's wiring delivers.
//
// Crashes are injected in process by a middleware on the deployer's AWS SDK clients: at a
// crash point, the Nth call of an operation (counted over the whole scenario, so retried
// work counts too), the call panics or the invocation's context is cancelled, either
// before the call reaches AWS or after AWS acted but before the deployer sees the answer.
// A restart point also kills `cairn local up`: the emulator, which keeps its state in a
// --dir for these plays, is stopped and started again on the same folder and address.
// From then on the invocation is a killed process: none of its calls reach AWS, its SQS
// messages return after the visibility timeout (the re-trigger), and the next invocation
// runs in a fresh process. After the world settles, invariants are checked against an
// uncrashed run of the same scenario: the same stacks, nothing deleted that the config
// keeps, no change set executed twice, a graph that agrees with the stacks' tags, a free
// lock, no run left running.
//
// `make test` runs the named crash points, the restart points and four random seeds;
// `make crash` runs more: CAIRN_CRASH_SEEDS=N seeds from CAIRN_CRASH_FIRST_SEED (default 1),
// CAIRN_CRASH_RESTART_SEEDS=N seeds restarting the emulator, CAIRN_CRASH_SWEEP=1 for a
// crash before and after every call, CAIRN_CRASH_SEED=S to replay one seed.
package crashtest
