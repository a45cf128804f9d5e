// Package cli implements the pxsubstrate command line. Each command group
// lives in its own file and registers itself with register, so adding a
// command never touches the root.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// App carries what every command shares: the streams and the output format.
type App struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Format is the value of the persistent -o flag: empty (the command's
	// default, a table for most), table, wide, json, yaml, name or
	// jsonpath=TEMPLATE.
	Format string
	// MaxInput is the value of --max-input-size, a Kubernetes quantity:
	// the most any command reads from one file or standard input.
	MaxInput string
}

var registry []func(*App) *cobra.Command

// register adds a top-level command. It is called from init functions, one
// per command file.
func register(f func(*App) *cobra.Command) { registry = append(registry, f) }

// ExitError ends the program with Code after printing Err (when non-nil).
// Commands return it when the exit code carries meaning, such as an audit
// that found an error-level finding.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks a mistake in the command line itself; it exits 2.
type usageError struct{ error }

// NewRoot builds the command tree around app.
func NewRoot(app *App) *cobra.Command {
	root := &cobra.Command{
		Use:               "pxsubstrate",
		Short:             "Tenant Kubernetes workers on Proxmox VE: networks, gateways, ACLs, templates, renders",
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(*cobra.Command, []string) error { return checkFormat(app.Format) },
	}
	root.SetIn(app.In)
	root.SetOut(app.Out)
	root.SetErr(app.ErrOut)
	root.PersistentFlags().StringVarP(&app.Format, "output", "o", "", "output format: "+outputFormats)
	root.PersistentFlags().StringVar(&app.MaxInput, "max-input-size", DefaultMaxInput, "the most read from one input file or standard input, a quantity such as 8Mi, at most "+MaxMaxInput+"; larger inputs, or YAML whose aliases expand beyond it, are refused")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmds := make([]*cobra.Command, 0, len(registry))
	for _, f := range registry {
		cmds = append(cmds, f(app))
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	root.AddCommand(cmds...)
	typeUsageErrors(root)
	return root
}

// Main runs the CLI with args and returns the process exit code: 0 on
// success, 2 for a bad command line, the ExitError's code when a command
// returns one, 1 for any other error. Errors go to errOut, never to out.
//
// SIGINT and SIGTERM cancel the command's context; Main returns 130 or
// 143 (128 + the signal) once the command has stopped, or after
// signalGrace if it has not (a read or a parse that does not look at the
// context), so that an interrupt always ends the program promptly. Files
// are written by rename, so a stop never leaves one half-written.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- execute(ctx, args, in, out, errOut) }()
	select {
	case code := <-done:
		return code
	case sig := <-sigs:
		cancel()
		select {
		case <-done:
		case <-time.After(signalGrace):
		}
		fmt.Fprintf(errOut, "Error: stopped by %s\n", sig)
		return 128 + int(sig.(syscall.Signal))
	}
}

// signalGrace is how long Main waits for a cancelled command to return.
const signalGrace = 500 * time.Millisecond

// execute runs the command line and maps its error to an exit code by the
// error's type: an *ExitError carries its code, a usageError (a bad
// command line, whichever check found it) is 2, anything else 1.
func execute(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	app := &App{In: in, Out: out, ErrOut: errOut}
	root := NewRoot(app)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		if exit.Err != nil {
			fmt.Fprintf(errOut, "Error: %s\n", printedError(exit.Err))
		}
		return exit.Code
	}
	fmt.Fprintf(errOut, "Error: %s\n", printedError(err))
	var usage usageError
	if errors.As(err, &usage) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return 2
	}
	return 1
}

// typeUsageErrors makes every command-line mistake cobra finds a
// usageError, so that exit codes follow error types: argument counts
// (each command's Args), required and grouped flags (checked before
// cobra would, in PreRunE), and unknown subcommands of a command group
// (which cobra would answer with the group's help and status 0).
func typeUsageErrors(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		}
	}
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	if c.Runnable() {
		pre := c.PreRunE
		c.PreRunE = func(cmd *cobra.Command, a []string) error {
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return usageError{err}
			}
			if err := cmd.ValidateFlagGroups(); err != nil {
				return usageError{err}
			}
			if pre != nil {
				return pre(cmd, a)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		typeUsageErrors(sub)
	}
}

// printedError is an error as the CLI prints it: decoding errors in the
// input's words, every line cut at termsafe.MaxLine (the last bound on
// text no caller could cut, such as an API's error body) and control
// characters escaped.
func printedError(err error) string {
	return escapeControl(termsafe.CutLines(plainError(err.Error())))
}
