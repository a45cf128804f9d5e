package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run parses the flags, builds the index and writes it; it prints the
// index digest on stdout.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s Spec
	var out, created string
	var bins []string
	fs.StringVar(&out, "out", "", "folder for the OCI image layout (must not exist or be empty)")
	fs.StringVar(&s.RootFS, "rootfs", "", "folder copied under / (etc/passwd, etc/group)")
	fs.StringVar(&s.Version, "version", "", "org.opencontainers.image.version")
	fs.StringVar(&s.Revision, "revision", "", "org.opencontainers.image.revision (the commit)")
	fs.StringVar(&created, "created", "", "seconds since the epoch of every file and the image (SOURCE_DATE_EPOCH)")
	fs.Func("binary", "<arch>=<path> of a linux binary; once per architecture ("+strings.Join(Architectures, ", ")+")", func(v string) error {
		bins = append(bins, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var errs []error
	if out == "" || s.RootFS == "" {
		errs = append(errs, errors.New("--out and --rootfs are required"))
	}
	sec, err := strconv.ParseInt(created, 10, 64)
	if err != nil {
		errs = append(errs, fmt.Errorf("--created %q: want seconds since the epoch, e.g. $(git log -1 --format=%%ct)", created))
	}
	s.Created = time.Unix(sec, 0)
	s.Binaries = map[string]string{}
	for _, b := range bins {
		arch, path, ok := strings.Cut(b, "=")
		if !ok || arch == "" || path == "" {
			errs = append(errs, fmt.Errorf("--binary %q: want <arch>=<path>", b))
			continue
		}
		s.Binaries[arch] = path
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 2
	}
	idx, err := Index(s)
	if err == nil {
		err = Write(out, idx)
	}
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 1
	}
	d, err := idx.Digest()
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, d)
	return 0
}
