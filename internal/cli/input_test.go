package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// padded writes a package values file for `admission policies --config`
// that a comment pads to size bytes.
func padded(t *testing.T, size int) string {
	t.Helper()
	doc := "zones:\n  - {name: default, bridge: vmbr70, uplinkVLAN: 70, uplinkBridges: [vmbr0]}\n#"
	doc += strings.Repeat("x", size-len(doc)) + "\n"
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInputSizeLimit: a file larger than --max-input-size is refused by
// name with the flag to raise, and the same file passes once the flag
// is raised; standard input is bounded the same way.
func TestInputSizeLimit(t *testing.T) {
	big := padded(t, 2<<20)
	_, errOut, code := run(t, "admission", "policies", "--config", big, "--max-input-size", "1Mi")
	if code != 1 || !strings.Contains(errOut, big+" is larger than --max-input-size (1Mi)") {
		t.Errorf("a 2 MiB file under a 1Mi limit: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code := run(t, "admission", "policies", "--config", big, "--max-input-size", "4Mi")
	if code != 0 || !strings.Contains(out, "ValidatingAdmissionPolicy") {
		t.Errorf("the same file under a 4Mi limit: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "admission", "policies", "--config", big, "--max-input-size", "lots")
	if code != 2 || !strings.Contains(errOut, `--max-input-size "lots"`) {
		t.Errorf("a bad --max-input-size: exit %d, stderr %q", code, errOut)
	}

	// An endless standard input (render vpc -f -) ends at the limit.
	var o, e bytes.Buffer
	start := time.Now()
	code = Main([]string{"render", "vpc", "-f", "-", "--max-input-size", "1Mi"}, zeros{}, &o, &e)
	if code != 1 || !strings.Contains(e.String(), "standard input is larger than --max-input-size (1Mi)") {
		t.Errorf("an endless standard input: exit %d, stderr %q", code, e.String())
	}
	t.Logf("an endless standard input was refused after %s", time.Since(start))
}

// zeros is an endless input, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// aliasBomb is YAML of about 1 MB whose one large string is aliased n times.
func aliasBomb(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "big: &big %q\nrefs: [", strings.Repeat("x", 1<<20-64))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*big")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// TestYAMLAliasExpansion: YAML whose aliases expand past the limit is
// refused before any decoder builds it; a file with a few small aliases,
// as people write them, is read.
func TestYAMLAliasExpansion(t *testing.T) {
	app := &App{In: bytes.NewReader(aliasBomb(300)), MaxInput: "8Mi"}
	start := time.Now()
	_, err := readInput(app, "-")
	if err == nil || !strings.Contains(err.Error(), "expands through YAML aliases to more than --max-input-size (8Mi") {
		t.Errorf("a 1 MB string aliased 300 times was read: %v", err)
	}
	t.Logf("refused after %s", time.Since(start))

	ok := "defaults: &d {bridge: vmbr1, mtu: 1500}\nzones:\n- {<<: *d, name: a}\n- {<<: *d, name: b}\n"
	app = &App{In: strings.NewReader(ok)}
	if data, err := readInput(app, "-"); err != nil || string(data) != ok {
		t.Errorf("YAML with small aliases: %q, %v", data, err)
	}
	// The same expansion under a limit it fits.
	if n, fits := yamlExpansion(aliasBomb(3), 8<<20); !fits || n < 3<<20 {
		t.Errorf("three aliases of 1 MB: %d bytes, fits %v; want more than 3 MiB that fit 8 MiB", n, fits)
	}
}

// FuzzYAMLExpansion: any input is measured without a panic, and a larger
// limit never turns an accepted input into a refused one.
func FuzzYAMLExpansion(f *testing.F) {
	f.Add([]byte("a: &a [1, 2]\nb: [*a, *a]\n"), int64(64))
	f.Add([]byte("a: &a [*a]\n"), int64(1<<20))
	f.Add([]byte("&a a: *a\n---\n*a\n"), int64(16))
	f.Add(aliasBomb(2)[:200], int64(100))
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if limit <= 0 || limit > 1<<30 {
			return
		}
		_, small := yamlExpansion(data, limit)
		_, large := yamlExpansion(data, 2*limit)
		if small && !large {
			t.Errorf("accepted under %d bytes but refused under %d", limit, 2*limit)
		}
	})
}

// TestMain lets TestSignalExit run the CLI as a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("PXSUBSTRATE_CLI_CHILD") == "1" {
		// The CLI reads standard input through a reader that reports on
		// fd 3 that reading has begun, so the parent signals a process
		// whose handlers are in place; the read then never ends.
		ready := os.NewFile(3, "ready")
		in := readyReader{ready: ready, r: os.Stdin}
		os.Exit(Main(strings.Fields(os.Getenv("PXSUBSTRATE_CLI_ARGS")), &in, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// readyReader writes one byte to ready on its first Read.
type readyReader struct {
	ready *os.File
	r     io.Reader
	said  bool
}

func (r *readyReader) Read(p []byte) (int, error) {
	if !r.said {
		r.said = true
		_, _ = r.ready.Write([]byte{1})
		r.ready.Close()
	}
	return r.r.Read(p)
}

// TestSignalExit: SIGINT and SIGTERM end a command blocked on its input,
// with 130 and 143, and say so on stderr.
func TestSignalExit(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		t.Run(sig.String(), func(t *testing.T) {
			readyR, readyW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			stdinR, stdinW, err := os.Pipe() // never written: the read blocks
			if err != nil {
				t.Fatal(err)
			}
			defer stdinW.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "PXSUBSTRATE_CLI_CHILD=1", "PXSUBSTRATE_CLI_ARGS=render vpc -f -")
			cmd.Stdin, cmd.ExtraFiles = stdinR, []*os.File{readyW}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			readyW.Close()
			stdinR.Close()
			if _, err := bufio.NewReader(readyR).ReadByte(); err != nil {
				t.Fatalf("the child never read its input: %v (stderr %q)", err, stderr.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			// A command that caught the signal and went on reading would
			// never end: it is killed after a wait no loaded machine needs.
			stopped := make(chan struct{})
			go func() { _ = cmd.Wait(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				<-stopped
				t.Fatalf("the process did not stop within a minute of %s (stderr %q)", sig, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != want {
				t.Errorf("exit %d after %s, want %d (stderr %q)", code, sig, want, stderr.String())
			}
			if !strings.Contains(stderr.String(), "Error: stopped by "+sig.String()) {
				t.Errorf("stderr %q does not say what stopped it", stderr.String())
			}
		})
	}
}

// TestEmptyFlagRefused: a flag given an empty value where a value is
// needed is a usage error naming it, next to the same command with a
// value.
func TestEmptyFlagRefused(t *testing.T) {
	_, errOut, code := run(t, "gateway", "priorities", "--key", "", "node-1", "node-2")
	if code != 2 || !strings.Contains(errOut, `invalid argument "" for "--key" flag: must not be empty`) {
		t.Errorf("--key '': exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := run(t, "gateway", "priorities", "--key", "vpc/a", "node-1", "node-2"); code != 0 || !strings.Contains(out, "node-1") {
		t.Errorf("--key vpc/a: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "template", "print", "9000", "local-lvm", "--factory-ca", "")
	if code != 2 || !strings.Contains(errOut, `for "--factory-ca" flag: must not be empty`) {
		t.Errorf("--factory-ca '': exit %d, stderr %q", code, errOut)
	}
}

// TestMaxInputSizeBounds: a --max-input-size above MaxMaxInput (8Ei and
// beyond overflow a byte count) or not above zero is refused by name with
// the maximum, as a usage error, before any input is read; the maximum
// itself and the default read the file.
func TestMaxInputSizeBounds(t *testing.T) {
	values := padded(t, 1<<10)
	for _, v := range []string{"8Ei", "9Ei", "16Ei", "1Pi", "1025Gi", "0", "0Mi", "-1", "-8Ei"} {
		_, errOut, code := run(t, "admission", "policies", "--config", values, "--max-input-size", v)
		want := fmt.Sprintf("--max-input-size %q: use a positive quantity of at most 1Ti", v)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("--max-input-size %s: exit %d, stderr %q; want exit 2 and %q", v, code, errOut, want)
		}
	}
	for _, v := range []string{"1Ti", "8Mi", "1024Gi"} {
		out, errOut, code := run(t, "admission", "policies", "--config", values, "--max-input-size", v)
		if code != 0 || !strings.Contains(out, "ValidatingAdmissionPolicy") {
			t.Errorf("--max-input-size %s: exit %d, stderr %q; want the policies", v, code, errOut)
		}
	}
}
