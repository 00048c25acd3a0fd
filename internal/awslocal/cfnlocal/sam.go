package cfnlocal

func (x *transformer) serverless(m map[string]any) error {
	return invalidf("Transform AWS::Serverless-2016-10-31 failed with: not yet")
}
