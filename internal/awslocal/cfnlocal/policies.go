package cfnlocal

// keptOnDelete reports whether a resource with that DeletionPolicy is kept (DELETE_SKIPPED)
// when an operation of kind removes it: Retain always but in the rollback of its
// stack's creation; RetainExceptOnCreate too, but deleted by a rollback of the operation
// that created it (the creation's, or an update's). See
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html.
func keptOnDelete(policy, kind string) bool {
	switch policy {
	case "Retain":
		return kind != "ROLLBACK"
	case "RetainExceptOnCreate":
		return kind != "ROLLBACK" && kind != "UPDATE_ROLLBACK"
	}
	return false
}
