// Package rundoc is a deployer run's data as cairn's bucket keeps it: the run document
// (runs/NAME/RUN_ID.json, the run state machine with what its steps and its report need)
// and the bundle a run deploys, downloaded exactly as uploaded and loaded. The deployer
// writes them; the readers — follow, history, review, replan, diff, drift and the CLI —
// read them here, without the driver.
package rundoc
