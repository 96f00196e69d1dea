// Package check decodes Kubernetes manifests strictly with the API types
// KEDA and Kubernetes themselves use, and checks what the types alone cannot:
// KEDA's own validation functions and CRD schemas, the project's deployment
// rules, the references between objects, and that every Barometer trigger
// uses only documented metadata keys.
//
// It is its own module so that KEDA's and Kubernetes' API types stay out of
// the scaler's go.mod. Its tests check everything under examples/, and the
// chart output and NOTES that .ci/charts.sh renders; they also build the
// image's binaries from the files .dockerignore admits, and start that
// scaler to send it every example trigger as KEDA would (skipped with
// -short):
//
//	cd examples/check && go test ./...
//	BAROMETER_CHECK_RENDERED=a.yaml:b.yaml BAROMETER_CHECK_NOTES=notes.txt go test ./...
package check
