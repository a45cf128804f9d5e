package demo_test

import (
	"context"
	"fmt"
	"io"

	"github.com/pxsubstrate/pxsubstrate/internal/sim/demo"
)

func ExampleRun() {
	res, err := demo.Run(context.Background(), io.Discard) // pass os.Stdout to read the story
	fmt.Println(len(res.Acts) == len(demo.Acts), res.OK(), err)
	// Output: true true <nil>
}
