package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

func init() { register(newVLANCmd) }

func newVLANCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vlan",
		Short: "VLAN zones: which 802.1Q IDs a ProxmoxNetworkZone can hand out",
	}
	cmd.AddCommand(newVLANRangesCmd(app))
	return cmd
}

// vlanRanges is what `pxsubstrate vlan ranges` reports.
type vlanRanges struct {
	// Count is the number of allocatable IDs.
	Count int `json:"count"`
	// Ranges are the allocatable IDs as maximal runs, spelled like
	// vlanRanges entries.
	Ranges []string `json:"ranges"`
	// IDs are the allocatable IDs in ascending order.
	IDs []int `json:"ids"`
}

func newVLANRangesCmd(app *App) *cobra.Command {
	var reserved []int
	cmd := &cobra.Command{
		Use:   "ranges RANGE... [--reserved N,...]",
		Short: "Print the IDs a zone with these vlanRanges and reservedVLANs can allocate",
		Long: "Parses vlanRanges entries (\"120\" or \"101-199\", each ID in 1-4094) exactly as the\n" +
			"controller does, removes the reserved IDs and prints what is left. A bad entry\n" +
			"prints the controller's own error and exits 1.",
		Example: "  pxsubstrate vlan ranges 100-199 250 --reserved 150,151\n  pxsubstrate vlan ranges 1-4094 -o json",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			set, err := vlanalloc.Allocatable(args, reserved)
			if err != nil {
				return &ExitError{Code: 1, Err: err}
			}
			out := vlanRanges{Count: set.Len(), Ranges: []string{}, IDs: set.IDs()}
			runs := set.Runs()
			for _, r := range runs {
				out.Ranges = append(out.Ranges, r.String())
			}
			return app.Print(out, func(w io.Writer) {
				fmt.Fprintln(w, "RANGE\tCOUNT")
				for _, r := range runs {
					fmt.Fprintf(w, "%s\t%d\n", r, r.Last-r.First+1)
				}
				fmt.Fprintf(w, "total\t%d\n", out.Count)
			})
		},
	}
	cmd.Flags().IntSliceVar(&reserved, "reserved", nil, "IDs never handed out (reservedVLANs), comma-separated")
	return cmd
}
