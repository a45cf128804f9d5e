package cli

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/pxsubstrate/pxsubstrate/capread"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// DefaultMaxInput is the default of --max-input-size: far above any
// tenant file, user.cfg or manifest the commands read, far below what
// would exhaust a workstation.
const DefaultMaxInput = "8Mi"

// MaxMaxInput is the largest --max-input-size: an input is read into
// memory whole, and a larger bound would guard nothing.
const MaxMaxInput = "1Ti"

// maxInputBytes parses --max-input-size, a Kubernetes quantity of at most
// MaxMaxInput bytes.
func (app *App) maxInputBytes() (int64, error) {
	v := app.MaxInput
	if v == "" {
		v = DefaultMaxInput
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 || q.Cmp(resource.MustParse(MaxMaxInput)) > 0 {
		return 0, usageError{errorf("--max-input-size %q: use a positive quantity of at most %s, such as 8Mi or 64Mi", v, MaxMaxInput)}
	}
	return q.Value(), nil
}

// readInput reads a file named on the command line; "-" is standard
// input. It reads at most --max-input-size bytes, and refuses YAML whose
// aliases would expand it beyond that size when decoded.
func readInput(app *App, name string) ([]byte, error) {
	limit, err := app.maxInputBytes()
	if err != nil {
		return nil, err
	}
	what := inputName(name)
	var data []byte
	if name == "-" {
		data, err = capread.All(app.In, limit, what)
	} else if data, err = capread.File(name, limit); err != nil && !errors.Is(err, capread.ErrTooLarge) {
		err = fmt.Errorf("cannot read %s: %w", what, err)
	}
	if errors.Is(err, capread.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than --max-input-size (%s); raise the flag if the input is meant to be this large", what, resource.NewQuantity(limit, resource.BinarySI))
	}
	if err != nil {
		return nil, err
	}
	if n, ok := yamlExpansion(data, limit); !ok {
		return nil, fmt.Errorf("%s expands through YAML aliases to more than --max-input-size (%s, at least %d bytes); write the repeated values out or raise the flag", what, resource.NewQuantity(limit, resource.BinarySI), n)
	}
	return data, nil
}

// inputName is how a message names an input given on the command line:
// its path, or "standard input" for -.
func inputName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// documentsError refuses an input that holds several YAML documents where
// the command reads one, saying what to do instead. The message leaves
// the file to the caller, which names it as its other errors do.
type documentsError struct {
	advice string
	err    *strictyaml.DocumentsError
}

func (e *documentsError) Error() string {
	return fmt.Sprintf("holds %d YAML documents (the second begins on line %d); this command reads one: %s", e.err.Count, e.err.Line, e.advice)
}

func (e *documentsError) Unwrap() error { return e.err }

// oneDocument words the refusal of an input holding several YAML documents
// where the command reads one, with advice on what to do; other errors are
// returned as they are.
func oneDocument(err error, advice string) error {
	var de *strictyaml.DocumentsError
	if errors.As(err, &de) {
		return &documentsError{advice: advice, err: de}
	}
	return err
}

// inFile puts the input's name before an error about its YAML documents
// (oneDocument's refusal, or an error in a document after the first), for
// a command whose other errors name the object read rather than the file.
func inFile(name string, err error) error {
	var de *documentsError
	var in *strictyaml.DocumentError
	if errors.As(err, &de) || errors.As(err, &in) {
		return fmt.Errorf("%s: %w", inputName(name), err)
	}
	return err
}

// errTooLarge stops the expansion count once it passes the limit.
var errTooLarge = errors.New("too large")

// yamlExpansion counts the bytes data's YAML documents hold once every
// alias is replaced by what it names, as a decoder into Go values builds
// them; ok is false when that passes limit. Input that is not YAML, or
// has no alias, is left to the command's own parser.
func yamlExpansion(data []byte, limit int64) (int64, bool) {
	if !bytes.Contains(data, []byte("*")) || !bytes.Contains(data, []byte("&")) {
		return int64(len(data)), true
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	sizes := map[*yaml.Node]int64{}
	var total int64
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return total, true // the end, or not YAML: the parser reports it
		}
		n, err := nodeSize(&doc, sizes, limit-total)
		total += n
		if err != nil {
			return total, false
		}
	}
}

// nodeSize is the expanded size of n, memoised per node so that an alias
// of an alias costs one lookup; it fails once the size passes budget.
func nodeSize(n *yaml.Node, sizes map[*yaml.Node]int64, budget int64) (int64, error) {
	if s, ok := sizes[n]; ok {
		if s > budget {
			return s, errTooLarge
		}
		return s, nil
	}
	// A node on the path being measured reads as too large: an alias
	// cycle never ends.
	sizes[n] = math.MaxInt64
	var size int64
	switch n.Kind {
	case yaml.AliasNode:
		s, err := nodeSize(n.Alias, sizes, budget)
		if err != nil {
			return s, err
		}
		size = s
	case yaml.ScalarNode:
		size = int64(len(n.Value)) + 1
	default:
		size = 2
		for _, c := range n.Content {
			s, err := nodeSize(c, sizes, budget-size)
			size += s
			if err != nil {
				return size, err
			}
		}
	}
	sizes[n] = size
	if size > budget {
		return size, errTooLarge
	}
	return size, nil
}

// nonEmpty is a string flag that refuses an empty value: a flag given as
// --flag "" (an unset shell variable, say) is a mistake, not "unset".
type nonEmpty struct{ p *string }

func (n nonEmpty) String() string {
	if n.p == nil {
		return ""
	}
	return *n.p
}

func (n nonEmpty) Set(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	*n.p = v
	return nil
}

func (nonEmpty) Type() string { return "string" }

// clientGoFile is a file client-go reads itself (a kubeconfig, a
// certificate it names), and how a message names it: its flag, or
// "kubeconfig" for one found through KUBECONFIG or ~/.kube/config.
type clientGoFile struct{ what, path string }

// checkFilesForClientGo holds the files client-go is about to read (it
// reads them itself, whole) to --max-input-size: a regular file larger
// than the bound, or a device such as /dev/zero, is refused by name before
// client-go opens it. A pipe (--kubeconfig <(...)) cannot be measured
// without consuming it, and is left to client-go.
func checkFilesForClientGo(app *App, files ...clientGoFile) error {
	limit, err := app.maxInputBytes()
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.path == "" {
			continue
		}
		st, err := os.Stat(f.path)
		switch {
		case err != nil:
			continue // missing: client-go says so, or skips a default path
		case st.Mode()&os.ModeDevice != 0:
			return fmt.Errorf("%s %s is a device, not a file: name a file", f.what, f.path)
		case st.Mode().IsRegular() && st.Size() > limit:
			return fmt.Errorf("%s %s is larger than --max-input-size (%s); raise the flag if the file is meant to be this large", f.what, f.path, resource.NewQuantity(limit, resource.BinarySI))
		}
	}
	return nil
}

// kubeconfigFiles are the files a kubeconfig loader reads: the explicit
// one named by flag, else each of its precedence.
func kubeconfigFiles(flag, explicit string, precedence []string) []clientGoFile {
	out := []clientGoFile{{flag, explicit}}
	for _, p := range precedence {
		out = append(out, clientGoFile{"kubeconfig", p})
	}
	return out
}
