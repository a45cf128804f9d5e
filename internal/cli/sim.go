package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/capread"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

func init() { register(newSimCmd) }

func newSimCmd(app *App) *cobra.Command {
	var file string
	var dump bool
	cmd := &cobra.Command{
		Use:   "sim -f SCENARIO",
		Short: "Run the network controller on an in-memory cluster through a scenario and print the final objects",
		Long: "Runs the ProxmoxNetwork and zone reconcilers on an in-memory API with a simulated\n" +
			"Kube-OVN and IPAM provider and a fake clock, through the scenario's steps (apply,\n" +
			"delete, restart, advance, converge, expect), then prints every object as YAML.\n" +
			"A scenario with more than 100 networks prints a summary instead (networks by state,\n" +
			"VLANs by zone, time, reconciles, writes) unless --dump is given; a converge that takes\n" +
			"longer than a second prints progress on stderr.\n" +
			"An expectation that does not hold is printed on stderr and exits 1.\n" +
			"The scenario format is described in docs/sim.md.",
		Example: "  pxsubstrate sim -f internal/sim/testdata/scenarios/lifecycle.yaml\n  pxsubstrate sim -f scenario.yaml -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readInput(app, file)
			if err != nil {
				return err
			}
			limit, err := app.maxInputBytes()
			if err != nil {
				return err
			}
			rep, err := sim.RunFileWith(cmd.Context(), file, data, sim.Options{Progress: app.ErrOut, MaxFileBytes: limit})
			if errors.Is(err, capread.ErrTooLarge) {
				err = fmt.Errorf("%w (--max-input-size); raise the flag if the file is meant to be this large", err)
			}
			if err != nil {
				return &ExitError{Code: 1, Err: fmt.Errorf("cannot run scenario %s: %w", file, oneDocument(err, "write each scenario to a file of its own"))}
			}
			if err := printSim(app, rep, dump); err != nil {
				return err
			}
			return simFailures(app.ErrOut, rep)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the scenario (YAML; - for stdin)")
	cmd.Flags().BoolVar(&dump, "dump", false, fmt.Sprintf("print every object even when the scenario has more than %d networks", simSummaryAbove))
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// simSummaryAbove is the number of networks above which sim prints a
// summary rather than every object.
const simSummaryAbove = 100

// printSim prints the final objects, or the summary of a large scenario.
func printSim(app *App, rep *sim.Report, dump bool) error {
	networks := 0
	for _, n := range rep.Summary.Networks {
		networks += n
	}
	if dump || networks <= simSummaryAbove {
		return app.Print(rep.Objects, nil)
	}
	return app.Print(rep.Summary, func(w io.Writer) { sim.WriteSummary(w, rep.Summary) })
}

func simFailures(w io.Writer, rep *sim.Report) error {
	if len(rep.Failures) == 0 {
		return nil
	}
	for _, f := range rep.Failures {
		fmt.Fprintln(w, "FAIL", f)
	}
	return &ExitError{Code: 1, Err: fmt.Errorf("%d expectation(s) of the scenario did not hold", len(rep.Failures))}
}
