package artifact

import "fmt"

// Kind is what an artifact is to the service that reads it, for its quotas.
type Kind int

const (
	// Other artifacts have no quota cairn checks.
	Other Kind = iota
	// FunctionCode is a Lambda function's deployment package.
	FunctionCode
	// LayerContent is a Lambda layer's content.
	LayerContent
	// StateMachineDefinition is a Step Functions state machine's definition.
	StateMachineDefinition
)

// The quotas checked before any call, as AWS has them (Lambda: "Deployment package (.zip
// file archive) size"; Step Functions: "Maximum state machine definition size").
// Lambda's 50 MB zipped quota applies to uploads made directly to Lambda only; code from
// S3, as packaged code is, counts unzipped.
const (
	// MaxLambdaUnzipped is the most a function's code and its layers may hold unzipped:
	// 250 MB.
	MaxLambdaUnzipped = 262_144_000
	// MaxLayers is the most layers a function may use.
	MaxLayers = 5
	// MaxStateMachineDefinition is the largest state machine definition: 1 MB.
	MaxStateMachineDefinition = 1_048_576
)

// Check says how an artifact of this kind breaks its service's quota, or nil.
func (k Kind) Check(info Info) error {
	switch k {
	case FunctionCode, LayerContent:
		what := "function code"
		if k == LayerContent {
			what = "layer"
		}
		if info.Unzipped > MaxLambdaUnzipped {
			return fmt.Errorf("the %s holds %s unzipped, more than Lambda's %s (250 MB) for a function's code and its layers together", what, size(info.Unzipped), size(MaxLambdaUnzipped))
		}
	case StateMachineDefinition:
		if info.Dir {
			return fmt.Errorf("a state machine definition is a file (JSON or YAML), not a folder")
		}
		if info.Size > MaxStateMachineDefinition {
			return fmt.Errorf("the definition is %s, more than Step Functions' %s (1 MB)", size(info.Size), size(MaxStateMachineDefinition))
		}
	}
	return nil
}

// size shows a size with its unit and its exact count.
func size(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1f MB (%d bytes)", float64(n)/1_000_000, n)
	case n >= 1_000:
		return fmt.Sprintf("%.1f kB (%d bytes)", float64(n)/1_000, n)
	}
	return fmt.Sprintf("%d bytes", n)
}
