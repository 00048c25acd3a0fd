package cfnlocal

// zoneLetters are the availability zones Fn::GetAZs answers in the regions that have
// other than three (a, b, c), by the letters of their names. See
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference-getavailabilityzones.html
// and https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html.
var zoneLetters = map[string]string{
	"us-east-1":      "abcdef",
	"us-west-1":      "ab",
	"us-west-2":      "abcd",
	"ca-central-1":   "abd",
	"ap-northeast-1": "acd",
	"ap-northeast-2": "abcd",
}

// availabilityZones is what Fn::GetAZs answers for region.
func availabilityZones(region string) []any {
	letters, ok := zoneLetters[region]
	if !ok {
		letters = "abc"
	}
	out := make([]any, len(letters))
	for i, l := range letters {
		out[i] = region + string(l)
	}
	return out
}
