// Package sweeper is the drift function's driver: it runs drift sweeps (internal/drift)
// against CloudFormation, one step per trigger, on an EventBridge schedule or on demand.
//
// No step waits for CloudFormation, as no deploy step does. A step loads the sweep, lets
// drift.Admit decide whether this trigger drives it, claims it (a conditional write: one
// invocation at a time), makes one pass — observe the detections in flight, drift.Observe,
// read the locks of the graphs whose stacks are next, drift.Schedule, start detections,
// drift.Start, write the reports of the graphs that settled — and hands the sweep to its
// next continuation, a delayed SQS message (drift.HandOff), or removes it once done.
// CloudFormation announces each finished detection ("CloudFormation Drift Detection
// Status Change"), which steps the waiting sweep at once; the continuation is the fallback
// when no event comes. The function's environment, its delayed messages and the routing
// of an SQS batch to one step per sweep are the deployer's too (internal/lambdajob).
package sweeper
