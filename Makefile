.PHONY: test demo build generate fmt vet lint image

test:
	hack/test.sh

demo:
	go run ./cmd/pxsubstrate demo

generate:
	hack/generate.sh

build:
	go build -o bin/ ./cmd/...

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	go vet ./...

lint:
	hack/lint.sh

image:
	hack/image.sh
