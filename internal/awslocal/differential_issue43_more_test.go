package awslocal_test

// issue43MoreScenarios are issue 43's scenarios of SSM, KMS, EventBridge, Lambda and IAM.
func issue43MoreScenarios() []documented {
	return nil
}
